#include "orchestrator/report/verdict_file.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/base/file.h"
#include "common/healthbench/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::MakeTempDir;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::FieldsAre;
using ::testing::HasSubstr;

class VerdictFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    const std::string dataset_path = dir_ + "/dataset.jsonl";
    HB_ASSERT_OK(WriteFileAtomically(
        dataset_path,
        R"({"prompt_id":"a","prompt":[{"role":"user","content":"q"}],"example_tags":[],)"
        R"("rubrics":[{"criterion":"c0","points":5,"tags":[]},{"criterion":"c1","points":-2,"tags":[]}]})"
        "\n"
        R"({"prompt_id":"b","prompt":[{"role":"user","content":"q"}],"example_tags":[],)"
        R"("rubrics":[{"criterion":"c0","points":1,"tags":[]}]})"
        "\n"));
    HB_ASSERT_OK_AND_ASSIGN(dataset_, LoadDataset(dataset_path, {}));
  }

  // Writes `contents` to a fresh verdict file and returns its path.
  std::string Write(const std::string& contents) {
    std::string path = dir_ + "/rows" + std::to_string(++files_) + ".jsonl";
    EXPECT_THAT(WriteFileAtomically(path, contents), ::hb::testing::IsOk());
    return path;
  }

  // The error LoadVerdicts gives for a file holding `contents`; must be kInvalidArgument.
  std::string VerdictError(const std::string& contents) {
    std::string path = Write(contents);
    absl::StatusOr<std::vector<VerdictRow>> rows = LoadVerdicts(path, dataset_);
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument) << rows.status();
    std::string message(rows.status().message());
    EXPECT_EQ(message.rfind(path + ":", 0), 0u) << message;
    return message.substr(path.size());
  }

  std::string dir_;
  int files_ = 0;
  Dataset dataset_;
};

TEST_F(VerdictFileTest, RoundTripsEveryField) {
  VerdictRow full{"a", 1,    true, "tab\there \"quoted\" \xC3\xA9\x01 </script>", 3, 812, 512,
                  41,  true, true};
  VerdictRow minimal{"b", 0, false, "", 1, 0, 0, 0};
  std::string path = Write(FormatVerdictLine(full) + "\n" + FormatVerdictLine(minimal) + "\n");
  HB_ASSERT_OK_AND_ASSIGN(std::vector<VerdictRow> rows, LoadVerdicts(path, dataset_));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_THAT(rows[0], FieldsAre("a", 1, true, full.explanation, 3, 812, 512, 41, true, true));
  EXPECT_THAT(rows[1], FieldsAre("b", 0, false, "", 1, 0, 0, 0, false, false));
}

TEST_F(VerdictFileTest, FormatsTheDocumentedLine) {
  EXPECT_EQ(FormatVerdictLine({"a", 1, true, "ok", 2, 10, 5, 3}),
            R"({"prompt_id":"a","rubric_index":1,"criteria_met":true,"explanation":"ok",)"
            R"("attempts":2,"prompt_tokens":10,"cached_tokens":5,"completion_tokens":3,)"
            R"("from_cache":false,"batch":false})");
  EXPECT_EQ(FormatFailureLine({"b", 0, "upstream 400"}),
            R"({"prompt_id":"b","rubric_index":0,"reason":"upstream 400"})");
}

TEST_F(VerdictFileTest, MinimalRowsGetDefaultUsageAndBlankLinesAreSkipped) {
  std::string path = Write(
      "\n"
      R"({"prompt_id":"a","rubric_index":0,"criteria_met":false,"explanation":"e","extra":1})"
      "\n  \n");
  HB_ASSERT_OK_AND_ASSIGN(std::vector<VerdictRow> rows, LoadVerdicts(path, dataset_));
  EXPECT_THAT(rows, ElementsAre(FieldsAre("a", 0, false, "e", 1, 0, 0, 0, false, false)));
}

TEST_F(VerdictFileTest, ReportsEachErrorWithFileAndLine) {
  const std::string ok =
      R"({"prompt_id":"a","rubric_index":0,"criteria_met":true,"explanation":"x"})";
  EXPECT_EQ(VerdictError("not json\n"), ":1: invalid JSON: Invalid value. at offset 1");
  EXPECT_EQ(VerdictError(ok + "\n[1]\n"), ":2: expected a JSON object, got array");
  EXPECT_EQ(VerdictError(R"({"rubric_index":0,"criteria_met":true,"explanation":"x"})"),
            ":1: field 'prompt_id': missing");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":7,"rubric_index":0,"criteria_met":true,"explanation":"x"})"),
      ":1: field 'prompt_id': expected a string, got number");
  EXPECT_EQ(VerdictError(R"({"prompt_id":"a","criteria_met":true,"explanation":"x"})"),
            ":1: field 'rubric_index': missing");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"a","rubric_index":"0","criteria_met":true,"explanation":"x"})"),
      ":1: field 'rubric_index': expected an integer, got string");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"a","rubric_index":0.5,"criteria_met":true,"explanation":"x"})"),
      ":1: field 'rubric_index': expected an integer, got number");
  EXPECT_EQ(VerdictError(R"({"prompt_id":"a","rubric_index":0,"explanation":"x"})"),
            ":1: field 'criteria_met': missing");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"a","rubric_index":0,"criteria_met":"yes","explanation":"x"})"),
      ":1: field 'criteria_met': expected a boolean, got string");
  EXPECT_EQ(VerdictError(R"({"prompt_id":"a","rubric_index":0,"criteria_met":true})"),
            ":1: field 'explanation': missing");
  EXPECT_EQ(VerdictError(R"({"prompt_id":"a","rubric_index":0,"criteria_met":true,)"
                         R"("explanation":"x","attempts":"2"})"),
            ":1: field 'attempts': expected an integer, got string");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"zzz","rubric_index":0,"criteria_met":true,"explanation":"x"})"),
      ":1: unknown prompt_id 'zzz'");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"a","rubric_index":2,"criteria_met":true,"explanation":"x"})"),
      ":1: rubric_index 2 out of range for prompt_id 'a' (2 rubric items)");
  EXPECT_EQ(
      VerdictError(R"({"prompt_id":"b","rubric_index":-1,"criteria_met":true,"explanation":"x"})"),
      ":1: rubric_index -1 out of range for prompt_id 'b' (1 rubric items)");
  EXPECT_EQ(VerdictError(ok + "\n\n" + ok + "\n"),
            ":3: duplicate row for prompt_id 'a' rubric_index 0 (first on line 1)");
}

TEST_F(VerdictFileTest, MissingFileKeepsReadFileCode) {
  EXPECT_THAT(LoadVerdicts(dir_ + "/absent.jsonl", dataset_),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.jsonl")));
}

TEST_F(VerdictFileTest, LoadsFailuresWithTheSameChecks) {
  std::string path = Write(R"({"prompt_id":"a","rubric_index":1,"reason":"budget exhausted"})"
                           "\n");
  HB_ASSERT_OK_AND_ASSIGN(std::vector<RowFailure> failures, LoadFailures(path, dataset_));
  EXPECT_THAT(failures, ElementsAre(FieldsAre("a", 1, "budget exhausted")));

  std::string bad = Write(R"({"prompt_id":"a","rubric_index":1})"
                          "\n");
  EXPECT_THAT(LoadFailures(bad, dataset_), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    Eq(bad + ":1: field 'reason': missing")));
  std::string dup = Write(R"({"prompt_id":"b","rubric_index":0,"reason":"x"})"
                          "\n"
                          R"({"prompt_id":"b","rubric_index":0,"reason":"y"})"
                          "\n");
  EXPECT_THAT(LoadFailures(dup, dataset_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq(dup + ":2: duplicate row for prompt_id 'b' rubric_index 0 (first on "
                                "line 1)")));
}

TEST_F(VerdictFileTest, TheHeaderTiesTheVerdictsToTheirResponses) {
  const VerdictsHeader header{"ckpt", "sha-r", dataset_.sha256, "sha-t"};
  EXPECT_EQ(FormatVerdictsHeader(header),
            R"({"verdicts_header":{"checkpoint":"ckpt","responses_sha256":"sha-r",)"
            R"("dataset_sha256":")" +
                dataset_.sha256 + R"(","grader_template_sha256":"sha-t"}})");
  const std::string path = Write(FormatVerdictsHeader(header) + "\n" +
                                 FormatVerdictLine({"b", 0, true, "ok", 1, 0, 0, 0}) + "\n");
  HB_ASSERT_OK_AND_ASSIGN(VerdictFile file, ReadVerdictFile(path, dataset_));
  ASSERT_TRUE(file.header.has_value());
  EXPECT_EQ(file.header->checkpoint, "ckpt");
  EXPECT_EQ(file.header->responses_sha256, "sha-r");
  EXPECT_EQ(file.header->grader_template_sha256, "sha-t");
  ASSERT_EQ(file.rows.size(), 1u);
  HB_ASSERT_OK_AND_ASSIGN(std::vector<VerdictRow> rows, LoadVerdicts(path, dataset_));
  EXPECT_EQ(rows.size(), 1u);

  EXPECT_THAT(CheckVerdictsHeader(path, file.header, "r.jsonl", "sha-r", dataset_.sha256),
              ::hb::testing::IsOk());
  EXPECT_THAT(
      CheckVerdictsHeader(path, file.header, "other.jsonl", "sha-x", dataset_.sha256),
      StatusIs(absl::StatusCode::kInvalidArgument,
               Eq(path + " grades responses with sha256 sha-r (checkpoint 'ckpt'), but "
                         "other.jsonl has sha256 sha-x: pass the responses file that run graded "
                         "(its summary.json names it under provenance.responses), or grade these "
                         "responses")));
  EXPECT_THAT(CheckVerdictsHeader(path, file.header, "r.jsonl", "sha-r", "sha-d"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("grades the dataset with sha256 " + dataset_.sha256)));
}

TEST_F(VerdictFileTest, FilesWithoutAHeaderStillLoad) {
  const std::string path = Write(FormatVerdictLine({"b", 0, true, "ok", 1, 0, 0, 0}) + "\n");
  HB_ASSERT_OK_AND_ASSIGN(VerdictFile file, ReadVerdictFile(path, dataset_));
  EXPECT_FALSE(file.header.has_value());
  EXPECT_EQ(file.rows.size(), 1u);
  EXPECT_THAT(CheckVerdictsHeader(path, file.header, "r.jsonl", "any", "any"),
              ::hb::testing::IsOk());
  EXPECT_THAT(MissingVerdictsHeaderWarning(path), HasSubstr(path + " has no verdicts_header"));
}

TEST_F(VerdictFileTest, AMalformedOrMisplacedHeaderIsAnError) {
  EXPECT_EQ(VerdictError(R"({"verdicts_header":{"checkpoint":"c","dataset_sha256":"d"}})"
                         "\n"),
            ":1: field 'verdicts_header.responses_sha256': missing");
  EXPECT_EQ(VerdictError(R"({"verdicts_header":[]})"
                         "\n"),
            ":1: field 'verdicts_header': expected an object, got array");
  EXPECT_EQ(VerdictError(FormatVerdictLine({"b", 0, true, "ok", 1, 0, 0, 0}) + "\n" +
                         FormatVerdictsHeader({"c", "r", "d", ""}) + "\n"),
            ":2: a verdicts_header may only be the first line");
}

}  // namespace
}  // namespace hb
