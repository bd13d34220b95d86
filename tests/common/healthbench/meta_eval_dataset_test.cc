#include "common/healthbench/meta_eval_dataset.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/jsonl_file.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A valid synthetic row; tests derive broken ones by substring replacement.
std::string Row(int n) {
  return absl::StrCat(
      R"({"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "q)", n,
      R"("}], "completion": "reply )", n, R"(", "rubric": "Asks about allergies.",)",
      R"( "category": "cluster:context_seeking", "binary_labels": [true, false, true],)",
      R"( "anonymized_physician_ids": ["p1", "p2", "p3"], "prompt_id": "id-)", n,
      R"(", "completion_id": "c-)", n, R"(", "extra": {"ignored": 1}})");
}

class MetaEvalDatasetTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& contents) {
    const std::string path = dir_ + "/meta.jsonl";
    EXPECT_THAT(WriteFileAtomically(path, contents), IsOk());
    return path;
  }
  // The load error of a file whose second line is Row(2) with `from` replaced by `to`.
  absl::Status SecondLineError(const std::string& from, const std::string& to) {
    const std::string bad = absl::StrReplaceAll(Row(2), {{from, to}});
    EXPECT_NE(bad, Row(2)) << from;
    return LoadMetaEvalDataset(Write(Row(1) + "\n" + bad + "\n")).status();
  }

  std::string dir_ = hb::testing::MakeTempDir();
};

TEST_F(MetaEvalDatasetTest, LoadsAValidFile) {
  const std::string text = Row(1) + "\n" + Row(2);
  const std::string path = Write(text);
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset dataset, LoadMetaEvalDataset(path));
  EXPECT_EQ(dataset.path, path);
  EXPECT_EQ(dataset.sha256, Sha256Hex(text));
  ASSERT_THAT(dataset.rows, SizeIs(2));
  const MetaEvalRow& row = dataset.rows[1];
  EXPECT_EQ(row.line, 2);
  EXPECT_THAT(row.prompt, ElementsAre(Message{"system", "s"}, Message{"user", "q2"}));
  EXPECT_EQ(row.completion, "reply 2");
  EXPECT_EQ(row.rubric, "Asks about allergies.");
  EXPECT_EQ(row.category, "cluster:context_seeking");
  EXPECT_THAT(row.binary_labels, ElementsAre(true, false, true));
  EXPECT_THAT(row.physician_ids, ElementsAre("p1", "p2", "p3"));
  EXPECT_EQ(row.prompt_id, "id-2");
  EXPECT_EQ(row.completion_id, "c-2");
}

TEST_F(MetaEvalDatasetTest, OptionalIdsAndAnEmptyFile) {
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset dataset,
                          LoadMetaEvalDataset(Write(absl::StrReplaceAll(
                              Row(1), {{R"("prompt_id": "id-1", )", ""}, {R"("c-1")", "null"}}))));
  ASSERT_THAT(dataset.rows, SizeIs(1));
  EXPECT_EQ(dataset.rows[0].prompt_id, "");
  EXPECT_EQ(dataset.rows[0].completion_id, "");
  HB_ASSERT_OK_AND_ASSIGN(const MetaEvalDataset empty, LoadMetaEvalDataset(Write("")));
  EXPECT_THAT(empty.rows, IsEmpty());
}

TEST_F(MetaEvalDatasetTest, ErrorsNameFileLineAndField) {
  const std::string prefix = dir_ + "/meta.jsonl:2: ";
  struct Case {
    std::string from, to, message;
  };
  for (const Case& c : std::vector<Case>{
           {"[true, false, true]", "[true, 0, true]",
            "field 'binary_labels[1]': expected a boolean, got number"},
           {"[true, false, true]", "[]", "field 'binary_labels': empty list"},
           {"[true, false, true]", "true",
            "field 'binary_labels': expected a list of booleans, "
            "got boolean"},
           {R"("binary_labels")", R"("labels")", "field 'binary_labels': missing"},
           {R"(["p1", "p2", "p3"])", R"(["p1", "p2"])",
            "field 'anonymized_physician_ids': 2 ids for 3 binary_labels (one id per label)"},
           {R"(["p1", "p2", "p3"])", R"(["p1", 2, "p3"])",
            "field 'anonymized_physician_ids[1]': expected a string, got number"},
           {R"("content": "q2")", R"("text": "q2")", "field 'prompt[1].content': missing"},
           {R"("rubric": "Asks about allergies.")", R"("rubric": null)",
            "field 'rubric': expected a string, got null"},
           {R"("category": "cluster:context_seeking")", R"("category": ["a"])",
            "field 'category': expected a string, got array"},
           {R"("completion": "reply 2")", R"("completion_": "reply 2")",
            "field 'completion': missing"},
           {R"("prompt_id": "id-2")", R"("prompt_id": 2)",
            "field 'prompt_id': expected a string, got number"},
       }) {
    EXPECT_THAT(SecondLineError(c.from, c.to),
                StatusIs(absl::StatusCode::kInvalidArgument, prefix + c.message))
        << c.from;
  }
  EXPECT_THAT(
      LoadMetaEvalDataset(Write(Row(1) + "\n\n" + Row(3))),
      StatusIs(absl::StatusCode::kInvalidArgument, prefix + jsonl_internal::kBlankLineError));
  EXPECT_THAT(
      LoadMetaEvalDataset(Write(Row(1) + "\n[1]\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, prefix + "expected a JSON object, got array"));
  EXPECT_THAT(LoadMetaEvalDataset(Write(Row(1) + "\n{\"prompt\": [\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::StartsWith(prefix + "invalid JSON: ")));
  EXPECT_THAT(LoadMetaEvalDataset(dir_ + "/absent.jsonl"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::HasSubstr("absent.jsonl")));
}

// --examples N: random.Random(0).sample over the rows, in sample order (SPEC §12); every row
// in file order when N is not smaller than the file.
TEST_F(MetaEvalDatasetTest, SelectionIsTheReferenceSample) {
  std::string text;
  for (int i = 1; i <= 40; ++i) absl::StrAppend(&text, Row(i), "\n");
  const std::string path = Write(text);
  HB_ASSERT_OK_AND_ASSIGN(MetaEvalDataset dataset, LoadMetaEvalDataset(path));
  SelectMetaEvalRows(dataset, 10);
  std::vector<int> lines;
  for (const MetaEvalRow& row : dataset.rows) lines.push_back(row.line);
  std::vector<int> expected;
  for (const size_t i : SampleIndices(40, 10)) expected.push_back(static_cast<int>(i) + 1);
  EXPECT_EQ(lines, expected);
  // CPython 3.11: [i + 1 for i in random.Random(0).sample(range(40), 10)].
  EXPECT_THAT(lines, ElementsAre(25, 27, 3, 17, 33, 32, 26, 20, 31, 12));

  HB_ASSERT_OK_AND_ASSIGN(MetaEvalDataset all, LoadMetaEvalDataset(path));
  SelectMetaEvalRows(all, 40);
  ASSERT_THAT(all.rows, SizeIs(40));
  for (int i = 0; i < 40; ++i) EXPECT_EQ(all.rows[static_cast<size_t>(i)].line, i + 1);
}

// The grader sees the prompt, then the completion as the assistant turn, then the raw rubric
// text with no "[points] " (SPEC §15); the reference's second replace also hits a literal
// <<rubric_item>> in the conversation (quirk 11).
TEST_F(MetaEvalDatasetTest, GraderPromptOfARow) {
  HB_ASSERT_OK_AND_ASSIGN(const GraderTemplate tmpl,
                          GraderTemplate::FromText("C=<<conversation>>|R=<<rubric_item>>",
                                                   /*require_reference=*/false));
  MetaEvalRow row;
  row.prompt = {{"system", "s"}, {"user", "q"}};
  row.completion = "a <<rubric_item>>";
  row.rubric = "Asks about allergies.";
  EXPECT_EQ(MetaEvalGraderPrompt(tmpl, row),
            "C=system: s\n\nuser: q\n\nassistant: a Asks about allergies.|R=Asks about "
            "allergies.");
  row.prompt.clear();
  row.completion = "";
  EXPECT_EQ(MetaEvalGraderPrompt(tmpl, row), "C=assistant: |R=Asks about allergies.");
}

}  // namespace
}  // namespace hb
