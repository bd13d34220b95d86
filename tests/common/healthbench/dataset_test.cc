#include "common/healthbench/dataset.h"

#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/healthbench/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// A valid synthetic record; tests derive broken ones by substring replacement.
std::string Record(const std::string& id) {
  return absl::StrCat(
      R"({"prompt": [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},)",
      R"( {"role": "user", "content": "q2"}], "prompt_id": ")", id, R"(",)",
      R"( "rubrics": [{"criterion": "c0", "points": 10, "tags": ["axis:accuracy", "level:example"]},)",
      R"( {"criterion": "c1", "points": -6, "tags": []}],)",
      R"( "example_tags": ["theme:hedging"], "ideal_completions_data": null,)",
      R"( "canary": "ignored"})");
}

// `Record(id)` with `from` replaced by `to` (which must occur).
std::string Edited(const std::string& id, const std::string& from, const std::string& to) {
  std::string record = Record(id);
  EXPECT_THAT(record, HasSubstr(from));
  return absl::StrReplaceAll(record, {{from, to}});
}

// The bytes of `path` as stored (no gzip decoding).
absl::StatusOr<std::string> ReadRaw(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return absl::NotFoundError(path);
  std::string stored;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) stored.append(buffer, n);
  std::fclose(file);
  return stored;
}

class DatasetTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    EXPECT_THAT(WriteFileAtomically(path, contents), IsOk());
    return path;
  }
  std::string WriteGzip(const std::string& name, const std::string& contents) {
    std::string path = dir_ + "/" + name;
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, contents.data(), static_cast<unsigned>(contents.size())),
              static_cast<int>(contents.size()));
    EXPECT_EQ(gzclose(file), Z_OK);
    return path;
  }
  // Loads a file whose only (line 2) record is `bad`, behind a valid first line.
  absl::StatusOr<Dataset> LoadWithSecondLine(const std::string& bad) {
    return LoadDataset(Write("bad.jsonl", Record("id-1") + "\n" + bad + "\n"), {});
  }

  std::string dir_ = hb::testing::MakeTempDir();
};

TEST_F(DatasetTest, LoadsAValidFile) {
  std::string text = Record("id-1") + "\n" + Record("id-2") + "\n";
  std::string path = Write("ok.jsonl", text);
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, {}));
  EXPECT_EQ(dataset.path, path);
  EXPECT_EQ(dataset.sha256, Sha256Hex(text));
  ASSERT_THAT(dataset.examples, SizeIs(2));
  EXPECT_THAT(dataset.skipped, IsEmpty());
  const Example& first = dataset.examples[0];
  EXPECT_EQ(first.prompt_id, "id-1");
  EXPECT_EQ(first.line, 1);
  EXPECT_THAT(first.prompt, ElementsAre(Message{"user", "q1"}, Message{"assistant", "a1"},
                                        Message{"user", "q2"}));
  ASSERT_THAT(first.rubrics, SizeIs(2));
  EXPECT_EQ(first.rubrics[0].criterion, "c0");
  EXPECT_EQ(first.rubrics[0].points, 10);
  EXPECT_EQ(first.rubrics[0].points_text, "10");
  EXPECT_THAT(first.rubrics[0].tags, ElementsAre("axis:accuracy", "level:example"));
  EXPECT_EQ(first.rubrics[1].points, -6);
  EXPECT_EQ(first.rubrics[1].points_text, "-6");
  EXPECT_THAT(first.rubrics[1].tags, IsEmpty());
  EXPECT_THAT(first.example_tags, ElementsAre("theme:hedging"));
  EXPECT_FALSE(first.ideal_completions.has_value());
  EXPECT_EQ(dataset.examples[1].line, 2);
  ASSERT_NE(dataset.Find("id-2"), nullptr);
  EXPECT_EQ(dataset.Find("id-2")->prompt_id, "id-2");
  EXPECT_EQ(dataset.Find("id-3"), nullptr);
}

TEST_F(DatasetTest, MissingTrailingNewlineIsFine) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset,
                          LoadDataset(Write("f.jsonl", Record("a") + "\n" + Record("b")), {}));
  EXPECT_THAT(dataset.examples, SizeIs(2));
}

TEST_F(DatasetTest, EmptyFileGivesAnEmptyDataset) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(Write("empty.jsonl", ""), {}));
  EXPECT_THAT(dataset.examples, IsEmpty());
  EXPECT_EQ(dataset.sha256, Sha256Hex(""));
}

TEST_F(DatasetTest, PointsTextIsHowPythonPrintsTheNumber) {
  struct Case {
    std::string literal;
    double points;
    std::string text;
  };
  for (const Case& c : std::vector<Case>{
           {"5.0", 5, "5.0"},
           {"-6", -6, "-6"},
           {"1e1", 10, "10.0"},
           {"2E0", 2, "2.0"},
           {"2.5", 2.5, "2.5"},
           {"-0", 0, "0"},
           {"-0.0", 0, "-0.0"},
           {"12345678901234567890", 12345678901234567890.0, "12345678901234567890"}}) {
    HB_ASSERT_OK_AND_ASSIGN(
        Example example,
        ParseExample(Edited("x", R"("points": 10)", R"("points": )" + c.literal), "p", 1));
    EXPECT_EQ(example.rubrics[0].points, c.points) << c.literal;
    EXPECT_EQ(example.rubrics[0].points_text, c.text) << c.literal;
  }
}

TEST_F(DatasetTest, ParsesIdealCompletionsLeniently) {
  HB_ASSERT_OK_AND_ASSIGN(
      Example example,
      ParseExample(Edited("x", R"("ideal_completions_data": null)",
                          R"("ideal_completions_data": {"ideal_completion": "best",)"
                          R"( "ideal_completions_group": "Group 2",)"
                          R"( "ideal_completions_ref_completions": ["r1", 7, "r2"], "x": 1})"),
                   "p", 1));
  ASSERT_TRUE(example.ideal_completions.has_value());
  EXPECT_EQ(example.ideal_completions->ideal_completion, "best");
  EXPECT_EQ(example.ideal_completions->group, "Group 2");
  EXPECT_THAT(example.ideal_completions->ref_completions, ElementsAre("r1", "r2"));

  HB_ASSERT_OK_AND_ASSIGN(
      Example odd, ParseExample(Edited("x", R"("ideal_completions_data": null)",
                                       R"("ideal_completions_data": {"ideal_completion": 3})"),
                                "p", 1));
  ASSERT_TRUE(odd.ideal_completions.has_value());
  EXPECT_EQ(odd.ideal_completions->ideal_completion, "");

  HB_ASSERT_OK_AND_ASSIGN(
      Example absent, ParseExample(Edited("x", R"( "ideal_completions_data": null,)", ""), "p", 1));
  EXPECT_FALSE(absent.ideal_completions.has_value());
}

TEST_F(DatasetTest, RepeatedKeyTakesTheLastValueLikePython) {
  HB_ASSERT_OK_AND_ASSIGN(
      Example example,
      ParseExample(Edited("x", R"("prompt_id": "x")", R"("prompt_id": 5, "prompt_id": "y")"), "p",
                   1));
  EXPECT_EQ(example.prompt_id, "y");
}

TEST_F(DatasetTest, KeepsNonAsciiAndEscapes) {
  HB_ASSERT_OK_AND_ASSIGN(
      Example example,
      ParseExample(Edited("x", R"("content": "q2")",
                          "\"content\": \"caf\xC3\xA9 \\u201cq\\u201d\\n\\u0000end\""),
                   "p", 1));
  EXPECT_EQ(example.prompt[2].content,
            std::string("caf\xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D\n\0end", 18));
}

// Every field rule, each with its exact message.
TEST_F(DatasetTest, FieldErrorsNameTheFieldAndType) {
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {R"("points": -6)", R"("points": "-6")",
       "bad.jsonl:2: field 'rubrics[1].points': expected a number, got string"},
      {R"("points": -6, )", "", "bad.jsonl:2: field 'rubrics[1].points': missing"},
      {R"("points": -6)", R"("points": true)",
       "field 'rubrics[1].points': expected a number, got boolean"},
      {R"("criterion": "c1")", R"("criterion": null)",
       "field 'rubrics[1].criterion': expected a string, got null"},
      {R"("criterion": "c1", )", "", "field 'rubrics[1].criterion': missing"},
      {R"("tags": [])", R"("tags": "t")",
       "field 'rubrics[1].tags': expected a list of strings, got string"},
      {R"("tags": [])", R"("tags": ["a", 1])",
       "field 'rubrics[1].tags[1]': expected a string, got number"},
      {R"("tags": [])", R"("tags": ["a", "a"])", "field 'rubrics[1].tags[1]': duplicate tag 'a'"},
      {R"(, "tags": [])", "", "field 'rubrics[1].tags': missing"},
      {R"({"criterion": "c1", "points": -6, "tags": []})", "[]",
       "field 'rubrics[1]': expected an object, got array"},
      {R"("rubrics": [)", R"("rubrics": [], "x": [)", "field 'rubrics': empty list"},
      {R"("rubrics": [)", R"("rubrics": {}, "x": [)",
       "field 'rubrics': expected a list of rubric items, got object"},
      {R"("rubrics": [)", R"("x": [)", "field 'rubrics': missing"},
      {R"("prompt": [)", R"("prompt": [], "x": [)", "field 'prompt': empty list"},
      {R"("prompt": [)", R"("prompt": "hi", "x": [)",
       "field 'prompt': expected a list of messages, got string"},
      {R"("prompt": [)", R"("x": [)", "field 'prompt': missing"},
      {R"({"role": "assistant", "content": "a1"})", "3",
       "field 'prompt[1]': expected an object, got number"},
      {R"("role": "assistant")", R"("role": 1)",
       "field 'prompt[1].role': expected a string, got number"},
      {R"("content": "a1")", R"("content": ["a1"])",
       "field 'prompt[1].content': expected a string, got array"},
      {R"(, "content": "a1")", "", "field 'prompt[1].content': missing"},
      {R"({"role": "user", "content": "q2"})", R"({"role": "assistant", "content": "q2"})",
       "field 'prompt[2].role': the last turn must be 'user', got 'assistant'"},
      {R"("example_tags": ["theme:hedging"])", R"("example_tags": "theme:hedging")",
       "field 'example_tags': expected a list of strings, got string"},
      {R"("example_tags": ["theme:hedging"])", R"("example_tags": ["t", "t"])",
       "field 'example_tags[1]': duplicate tag 't'"},
      {R"("example_tags": ["theme:hedging"], )", "", "field 'example_tags': missing"},
      {R"("prompt_id": "id-2")", R"("prompt_id": "")", "field 'prompt_id': empty string"},
      {R"("prompt_id": "id-2")", R"("prompt_id": 2)",
       "field 'prompt_id': expected a string, got number"},
      {R"("prompt_id": "id-2",)", "", "field 'prompt_id': missing"},
      {R"("ideal_completions_data": null)", R"("ideal_completions_data": [])",
       "field 'ideal_completions_data': expected null or an object, got array"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(LoadWithSecondLine(Edited("id-2", c.from, c.to)),
                StatusIs(kInvalid, HasSubstr(c.message)))
        << c.from << " -> " << c.to;
  }
}

TEST_F(DatasetTest, ErrorMessageStartsWithPathAndLine) {
  absl::StatusOr<Dataset> result =
      LoadWithSecondLine(Edited("id-2", R"("points": -6)", R"("points": "x")"));
  EXPECT_THAT(result, StatusIs(kInvalid, ::testing::StartsWith(dir_ + "/bad.jsonl:2: field")));
}

TEST_F(DatasetTest, RecordMustBeAnObject) {
  EXPECT_THAT(LoadWithSecondLine("[1, 2]"),
              StatusIs(kInvalid, HasSubstr("bad.jsonl:2: expected a JSON object, got array")));
}

TEST_F(DatasetTest, InvalidJsonGivesRapidJsonErrorAndOffset) {
  EXPECT_THAT(LoadWithSecondLine(R"({"prompt": [})"),
              StatusIs(kInvalid, HasSubstr("bad.jsonl:2: invalid JSON: ")));
  EXPECT_THAT(LoadWithSecondLine(R"({"a": 1} x)"),
              StatusIs(kInvalid,
                       AllOf(HasSubstr("bad.jsonl:2: invalid JSON: "), HasSubstr("at offset 9"))));
  EXPECT_THAT(LoadWithSecondLine(R"({"a": tru})"),
              StatusIs(kInvalid, HasSubstr("Invalid value. at offset 9")));
  // Invalid UTF-8 is rejected (Python would fail to decode the file).
  EXPECT_THAT(LoadWithSecondLine(Edited("id-2", "q2", "q\xFF")),
              StatusIs(kInvalid, HasSubstr("bad.jsonl:2: invalid JSON: Invalid encoding")));
  // NaN is not JSON for RapidJSON.
  EXPECT_THAT(LoadWithSecondLine(Edited("id-2", R"("points": -6)", R"("points": NaN)")),
              StatusIs(kInvalid, HasSubstr("bad.jsonl:2: invalid JSON: ")));
}

TEST_F(DatasetTest, AMegabyteLineOfOpenBracketsIsAClearErrorNotACrash) {
  EXPECT_THAT(LoadWithSecondLine(std::string(1 << 20, '[')),
              StatusIs(kInvalid, HasSubstr("bad.jsonl:2: invalid JSON: nesting deeper than 64 "
                                           "levels at offset 64")));
}

TEST_F(DatasetTest, BlankLinesAreErrors) {
  std::string middle = Write("middle.jsonl", Record("a") + "\n\n" + Record("b") + "\n");
  EXPECT_THAT(LoadDataset(middle, {}), StatusIs(kInvalid, HasSubstr("middle.jsonl:2: blank line")));
  std::string trailing = Write("trailing.jsonl", Record("a") + "\n\n");
  EXPECT_THAT(LoadDataset(trailing, {}),
              StatusIs(kInvalid, HasSubstr("trailing.jsonl:2: blank line")));
  std::string spaces = Write("spaces.jsonl", Record("a") + "\n \t\r\n");
  EXPECT_THAT(LoadDataset(spaces, {}), StatusIs(kInvalid, HasSubstr("spaces.jsonl:2: blank line")));
}

TEST_F(DatasetTest, DuplicatePromptIdNamesBothLines) {
  std::string path =
      Write("dup.jsonl", Record("a") + "\n" + Record("b") + "\n" + Record("a") + "\n");
  EXPECT_THAT(LoadDataset(path, {}),
              StatusIs(kInvalid, HasSubstr("dup.jsonl:3: field 'prompt_id': duplicate "
                                           "prompt_id 'a' (first on line 1)")));
}

TEST_F(DatasetTest, SkipInvalidRecordsEveryRejectedLine) {
  std::string path = Write(
      "mixed.jsonl", Record("a") + "\n" + "not json\n" + Record("b") + "\n" + Record("a") + "\n\n" +
                         Edited("c", R"("points": 10)", R"("points": [])") + "\n" + Record("d"));
  LoadOptions options;
  options.skip_invalid = true;
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, options));
  ASSERT_THAT(dataset.examples, SizeIs(3));
  EXPECT_EQ(dataset.examples[0].prompt_id, "a");
  EXPECT_EQ(dataset.examples[1].prompt_id, "b");
  EXPECT_EQ(dataset.examples[2].prompt_id, "d");
  EXPECT_EQ(dataset.examples[2].line, 7);
  ASSERT_THAT(dataset.skipped, SizeIs(4));
  EXPECT_EQ(dataset.skipped[0].line, 2);
  EXPECT_THAT(dataset.skipped[0].error, HasSubstr("mixed.jsonl:2: invalid JSON"));
  EXPECT_EQ(dataset.skipped[1].line, 4);
  EXPECT_THAT(dataset.skipped[1].error, HasSubstr("duplicate prompt_id 'a' (first on line 1)"));
  EXPECT_EQ(dataset.skipped[2].line, 5);
  EXPECT_THAT(dataset.skipped[2].error, HasSubstr("blank line"));
  EXPECT_EQ(dataset.skipped[3].line, 6);
  EXPECT_THAT(dataset.skipped[3].error,
              HasSubstr("field 'rubrics[0].points': expected a number, got array"));
  // The index points at the kept examples.
  ASSERT_NE(dataset.Find("d"), nullptr);
  EXPECT_EQ(dataset.Find("d")->line, 7);
  EXPECT_EQ(dataset.Find("c"), nullptr);
  // Without the option the first bad line fails the load.
  EXPECT_THAT(LoadDataset(path, {}), StatusIs(kInvalid, HasSubstr("mixed.jsonl:2: ")));
}

// A file large enough to be parsed on several threads (common/base/parallel.h) reads exactly
// as one pass would: examples in file order, the first bad line the error, duplicates found
// across the parts.
TEST_F(DatasetTest, ALargeFileParsedInPartsKeepsFileOrderAndTheFirstError) {
  std::string contents;
  for (int i = 1; i <= 2000; ++i) {
    if (i == 700 || i == 1500) {
      contents += "not json\n";
    } else if (i == 1800) {
      contents += Record("id-10") + "\n";
    } else {
      contents += Record(absl::StrCat("id-", i)) + "\n";
    }
  }
  const std::string path = Write("large.jsonl", contents);
  EXPECT_THAT(LoadDataset(path, {}),
              StatusIs(kInvalid, HasSubstr("large.jsonl:700: invalid JSON")));
  LoadOptions options;
  options.skip_invalid = true;
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, options));
  ASSERT_THAT(dataset.examples, SizeIs(1997));
  for (size_t i = 1; i < dataset.examples.size(); ++i) {
    ASSERT_LT(dataset.examples[i - 1].line, dataset.examples[i].line);
  }
  EXPECT_EQ(dataset.examples.back().prompt_id, "id-2000");
  ASSERT_THAT(dataset.skipped, SizeIs(3));
  EXPECT_EQ(dataset.skipped[0].line, 700);
  EXPECT_EQ(dataset.skipped[1].line, 1500);
  EXPECT_EQ(dataset.skipped[2].line, 1800);
  EXPECT_THAT(dataset.skipped[2].error,
              HasSubstr("duplicate prompt_id 'id-10' (first on line 10)"));
  ASSERT_NE(dataset.Find("id-1999"), nullptr);
  EXPECT_EQ(dataset.Find("id-1999")->line, 1999);
}

TEST_F(DatasetTest, ReadErrorsKeepTheirCodes) {
  EXPECT_THAT(LoadDataset(dir_ + "/absent.jsonl", {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.jsonl")));
  EXPECT_THAT(LoadDataset(dir_, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(dir_)));
  // A gzip file whose CRC trailer no longer matches its data.
  std::string path = WriteGzip("corrupt.jsonl.gz", Record("a") + "\n");
  HB_ASSERT_OK_AND_ASSIGN(std::string stored, ReadRaw(path));
  ASSERT_GT(stored.size(), 8u);
  stored[stored.size() - 8] = static_cast<char>(stored[stored.size() - 8] ^ 0xff);
  std::string corrupt = Write("corrupt.jsonl.gz", stored);
  EXPECT_THAT(LoadDataset(corrupt, {}),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("corrupt.jsonl.gz")));
}

TEST_F(DatasetTest, GzipLoadsTransparentlyAndHashesTheCompressedBytes) {
  std::string text = Record("a") + "\n" + Record("b") + "\n";
  std::string path = WriteGzip("data.jsonl.gz", text);
  HB_ASSERT_OK_AND_ASSIGN(std::string raw, ReadFile(path));
  ASSERT_EQ(raw, text);  // ReadFile decompresses; the hash must not be of this.
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, {}));
  EXPECT_THAT(dataset.examples, SizeIs(2));
  EXPECT_NE(dataset.sha256, Sha256Hex(text));
  // Recompute over the bytes on disk with zlib out of the way.
  HB_ASSERT_OK_AND_ASSIGN(std::string stored, ReadRaw(path));
  ASSERT_EQ(static_cast<unsigned char>(stored[0]), 0x1f);
  EXPECT_EQ(dataset.sha256, Sha256Hex(stored));
  // Errors in a gzip file still name the line.
  std::string bad = WriteGzip("bad.jsonl.gz", Record("a") + "\n{\n");
  EXPECT_THAT(LoadDataset(bad, {}), StatusIs(kInvalid, HasSubstr("bad.jsonl.gz:2: invalid JSON")));
}

// ---- The real HealthBench files (shared/data/healthbench). ----

struct RealFile {
  const char* name;
  size_t records;
  size_t rubric_rows;
};

class RealDatasetTest : public ::testing::TestWithParam<RealFile> {};

TEST_P(RealDatasetTest, LoadsWithExpectedCounts) {
  std::string path = hb::testing::SharedDataFile(GetParam().name);
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, {}));
  EXPECT_THAT(dataset.skipped, IsEmpty());
  EXPECT_EQ(dataset.examples.size(), GetParam().records);
  size_t rows = 0;
  for (const Example& example : dataset.examples) {
    rows += example.rubrics.size();
    ASSERT_FALSE(example.prompt.empty());
    EXPECT_EQ(example.prompt.back().role, "user") << example.prompt_id;
    EXPECT_EQ(dataset.Find(example.prompt_id), &example);
    for (const RubricItem& item : example.rubrics) {
      EXPECT_FALSE(item.points_text.empty());
      EXPECT_EQ(item.points_text, absl::StrCat(static_cast<int>(item.points)))
          << "official points are JSON integers";
    }
  }
  EXPECT_EQ(rows, GetParam().rubric_rows);
  HB_ASSERT_OK_AND_ASSIGN(std::string bytes, ReadFile(path));
  EXPECT_EQ(dataset.sha256, Sha256Hex(bytes));
}

INSTANTIATE_TEST_SUITE_P(SharedData, RealDatasetTest,
                         ::testing::Values(RealFile{hb::testing::kMainHead30, 30, 352},
                                           RealFile{hb::testing::kHardHead4, 4, 59},
                                           RealFile{hb::testing::kConsensus104, 104, 208}),
                         [](const ::testing::TestParamInfo<RealFile>& param) {
                           return std::string(param.index == 0   ? "Main"
                                              : param.index == 1 ? "Hard"
                                                                 : "Consensus");
                         });

TEST_F(DatasetTest, RealFileLoadsTheSameWhenGzipped) {
  std::string path = hb::testing::SharedDataFile(hb::testing::kMainHead30);
  HB_ASSERT_OK_AND_ASSIGN(Dataset plain, LoadDataset(path, {}));
  HB_ASSERT_OK_AND_ASSIGN(std::string text, ReadFile(path));
  HB_ASSERT_OK_AND_ASSIGN(Dataset gz, LoadDataset(WriteGzip("main.jsonl.gz", text), {}));
  ASSERT_EQ(gz.examples.size(), plain.examples.size());
  for (size_t i = 0; i < gz.examples.size(); ++i) {
    EXPECT_EQ(gz.examples[i].prompt_id, plain.examples[i].prompt_id);
    EXPECT_EQ(gz.examples[i].prompt, plain.examples[i].prompt);
    EXPECT_EQ(gz.examples[i].rubrics.size(), plain.examples[i].rubrics.size());
  }
  EXPECT_NE(gz.sha256, plain.sha256);
}

// ---- SampleIndices / SelectExamples. ----

// ---- HealthBench Professional ------------------------------------------------------------

// A valid synthetic Professional record (our own text, not OpenAI's data).
std::string ProRecord(const std::string& id) {
  return absl::StrCat(
      R"({"id": ")", id, R"(", "conversation": {"messages": [{"role": "user", "content": "q"}]},)",
      R"( "rubric_items": [{"criterion_text": "c0", "points": 4}, {"criterion": "c1",)",
      R"( "points": -2, "tags": ["axis:accuracy"]}], "use_case": "u", "type": "t",)",
      R"( "difficulty": null, "specialty": "s"})");
}

std::string ProEdited(const std::string& from, const std::string& to) {
  std::string record = ProRecord("p-1");
  EXPECT_THAT(record, HasSubstr(from));
  return absl::StrReplaceAll(record, {{from, to}});
}

TEST_F(DatasetTest, ProfessionalSyntheticFileLoads) {
  const std::string path =
      hb::testing::SourceDir() + "/tests/common/healthbench/testdata/professional_synthetic.jsonl";
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(path, {}));
  EXPECT_EQ(dataset.format, DatasetFormat::kProfessional);
  EXPECT_STREQ(DatasetFormatName(dataset.format), "professional");
  ASSERT_THAT(dataset.examples, SizeIs(3));
  const Example& first = dataset.examples[0];
  EXPECT_EQ(first.prompt_id, "pro-001");
  ASSERT_THAT(first.prompt, SizeIs(1));
  EXPECT_EQ(first.prompt[0].role, "user");
  ASSERT_THAT(first.rubrics, SizeIs(3));
  EXPECT_EQ(first.rubrics[0].criterion, "States that the dose depends on creatinine clearance.");
  EXPECT_THAT(first.rubrics[0].tags, ElementsAre("axis:accuracy"));
  EXPECT_THAT(first.rubrics[1].tags, IsEmpty());
  EXPECT_EQ(first.rubrics[2].points_text, "-5");
  EXPECT_THAT(first.example_tags, ElementsAre("use_case:clinical_reference", "type:question",
                                              "difficulty:hard", "specialty:nephrology"));
  EXPECT_THAT(first.slices, SizeIs(4));
  // An integer id, a bare message list, `criterion`, a null slice.
  const Example& second = dataset.examples[1];
  EXPECT_EQ(second.prompt_id, "2");
  EXPECT_THAT(second.prompt, SizeIs(3));
  EXPECT_EQ(second.rubrics[0].criterion, "Mentions that troponin was negative.");
  EXPECT_THAT(second.example_tags,
              ElementsAre("use_case:documentation", "type:task", "specialty:cardiology"));
  // Non-ASCII kept; a float point value prints as Python would; an absent slice.
  const Example& third = dataset.examples[2];
  EXPECT_EQ(third.prompt[0].content,
            "R\xc3\xa9"
            "ponds en fran\xc3\xa7"
            "ais.");
  EXPECT_EQ(third.rubrics[1].points_text, "2.0");
  EXPECT_THAT(third.example_tags, SizeIs(3));
  ASSERT_NE(dataset.Find("pro-003"), nullptr);
}

TEST_F(DatasetTest, HealthBenchFileIsDetectedAsSuch) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(Write("hb.jsonl", Record("a")), {}));
  EXPECT_EQ(dataset.format, DatasetFormat::kHealthBench);
  EXPECT_THAT(dataset.examples[0].slices, IsEmpty());
}

TEST_F(DatasetTest, ProfessionalFieldErrorsNameTheField) {
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {R"("id": "p-1", )", "", "field 'id': missing"},
      {R"("id": "p-1")", R"("id": "")", "field 'id': empty string"},
      {R"("id": "p-1")", R"("id": [1])", "field 'id': expected a string, got array"},
      {R"({"messages": [{"role": "user", "content": "q"}]})", R"({"turns": []})",
       "field 'conversation.messages': missing"},
      {R"("role": "user")", R"("role": "assistant")",
       "field 'conversation.messages[0].role': the last turn must be 'user', got 'assistant'"},
      {R"({"messages": [{"role": "user", "content": "q"}]})", "7",
       "field 'conversation': expected a list of messages, got number"},
      {R"("criterion_text": "c0", )", "",
       "field 'rubric_items[0].criterion': missing (or criterion_text)"},
      {R"("criterion_text": "c0")", R"("criterion_text": 3)",
       "field 'rubric_items[0].criterion_text': expected a string, got number"},
      {R"("points": -2)", R"("points": "-2")",
       "field 'rubric_items[1].points': expected a number, got string"},
      {R"("tags": ["axis:accuracy"])", R"("tags": ["a", "a"])",
       "field 'rubric_items[1].tags[1]': duplicate tag 'a'"},
      {R"("specialty": "s")", R"("specialty": 5)",
       "field 'specialty': expected a string or null, got number"},
  };
  for (const Case& c : cases) {
    const std::string path = Write("pro.jsonl", ProRecord("p-0") + "\n" + ProEdited(c.from, c.to));
    EXPECT_THAT(LoadDataset(path, {}), StatusIs(kInvalid, HasSubstr("pro.jsonl:2: " + c.message)))
        << c.to;
  }
  const std::string dup = Write("dup.jsonl", ProRecord("x") + "\n" + ProRecord("x"));
  EXPECT_THAT(LoadDataset(dup, {}),
              StatusIs(kInvalid, HasSubstr("dup.jsonl:2: field 'id': duplicate id 'x' (first on "
                                           "line 1)")));
  // The format is decided per file: a HealthBench record in a Professional file is an error.
  const std::string mixed = Write("mixed.jsonl", ProRecord("x") + "\n" + Record("y"));
  EXPECT_THAT(LoadDataset(mixed, {}), StatusIs(kInvalid, HasSubstr("mixed.jsonl:2: field 'id': "
                                                                   "missing")));
}

TEST(SampleIndicesTest, SpecVectors) {
  // SPEC §12: random.Random(0).sample(range(n), 10) on CPython 3.11.
  EXPECT_THAT(SampleIndices(5000, 10),
              ElementsAre(3155, 3445, 331, 2121, 4188, 3980, 3317, 2484, 3904, 2933));
  EXPECT_THAT(SampleIndices(1000, 10),
              ElementsAre(864, 394, 776, 911, 430, 41, 265, 988, 523, 497));
  EXPECT_THAT(SampleIndices(3671, 10),
              ElementsAre(3458, 1577, 3104, 3646, 1722, 165, 1060, 2094, 1990, 1658));
  EXPECT_THAT(SampleIndices(29511, 10),
              ElementsAre(27670, 12623, 24836, 29171, 13781, 1326, 8484, 16753, 15922, 13268));
}

TEST(SampleIndicesTest, NoSamplingWhenKIsAtLeastN) {
  EXPECT_THAT(SampleIndices(4, 4), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(SampleIndices(3, 10), ElementsAre(0, 1, 2));
  EXPECT_THAT(SampleIndices(0, 0), IsEmpty());
  EXPECT_THAT(SampleIndices(5, 0), IsEmpty());
}

TEST(SampleIndicesTest, DistinctAndInRange) {
  for (size_t n : {2u, 7u, 30u, 100u, 5000u}) {
    for (size_t k = 1; k < n && k < 60; k += 7) {
      std::vector<size_t> indices = SampleIndices(n, k, 7);
      ASSERT_EQ(indices.size(), k);
      std::vector<bool> seen(n, false);
      for (size_t i : indices) {
        ASSERT_LT(i, n);
        ASSERT_FALSE(seen[i]) << "n=" << n << " k=" << k;
        seen[i] = true;
      }
    }
  }
}

TEST_F(DatasetTest, SelectExamplesKeepsSampleOrderAndRebuildsTheIndex) {
  std::string text;
  for (int i = 0; i < 30; ++i) text += Record(absl::StrCat("id-", i)) + "\n";
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(Write("thirty.jsonl", text), {}));
  std::vector<size_t> expected = SampleIndices(30, 5);
  SelectExamples(dataset, 5);
  ASSERT_THAT(dataset.examples, SizeIs(5));
  ASSERT_THAT(dataset.index, SizeIs(5));
  for (size_t i = 0; i < 5; ++i) {
    std::string id = absl::StrCat("id-", expected[i]);
    EXPECT_EQ(dataset.examples[i].prompt_id, id);
    EXPECT_EQ(dataset.Find(id), &dataset.examples[i]);
  }
  // k >= n keeps file order.
  HB_ASSERT_OK_AND_ASSIGN(Dataset all, LoadDataset(Write("thirty.jsonl", text), {}));
  SelectExamples(all, 30);
  ASSERT_THAT(all.examples, SizeIs(30));
  for (size_t i = 0; i < 30; ++i) EXPECT_EQ(all.examples[i].prompt_id, absl::StrCat("id-", i));
}

}  // namespace
}  // namespace hb
