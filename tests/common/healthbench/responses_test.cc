#include "common/healthbench/responses.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/healthbench/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr absl::StatusCode kInvalidArgument = absl::StatusCode::kInvalidArgument;

class ResponsesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* id : {"a", "b", "c"}) {
      Example example;
      example.prompt_id = id;
      dataset_.index.emplace(id, dataset_.examples.size());
      dataset_.examples.push_back(example);
    }
  }
  std::string Write(const std::string& contents) {
    std::string path = dir_ + "/responses.jsonl";
    EXPECT_THAT(WriteFileAtomically(path, contents), IsOk());
    return path;
  }
  absl::StatusOr<ResponseSet> Load(const std::string& contents) {
    return LoadResponses(Write(contents), dataset_);
  }

  std::string dir_ = hb::testing::MakeTempDir();
  Dataset dataset_;
};

TEST_F(ResponsesTest, LoadsResponses) {
  std::string text =
      "{\"prompt_id\": \"b\", \"response\": \"reply \xC3\xA9\", \"extra\": 1}\n"
      "{\"prompt_id\": \"a\", \"response\": \"\", \"system_prompt\": \"S\"}\n"
      "{\"prompt_id\": \"c\", \"response\": \"r\", \"system_prompt\": null}";
  std::string path = Write(text);
  HB_ASSERT_OK_AND_ASSIGN(ResponseSet set, LoadResponses(path, dataset_));
  EXPECT_EQ(set.path, path);
  EXPECT_EQ(set.sha256, Sha256Hex(text));
  ASSERT_THAT(set.responses, SizeIs(3));
  EXPECT_EQ(set.responses[0].prompt_id, "b");
  EXPECT_EQ(set.responses[0].response, "reply \xC3\xA9");
  EXPECT_FALSE(set.responses[0].system_prompt.has_value());
  EXPECT_EQ(set.responses[0].line, 1);
  // An empty response is legal (it is graded as such).
  EXPECT_EQ(set.responses[1].response, "");
  EXPECT_EQ(set.responses[1].system_prompt, std::optional<std::string>("S"));
  EXPECT_FALSE(set.responses[2].system_prompt.has_value());
  ASSERT_NE(set.Find("a"), nullptr);
  EXPECT_EQ(set.Find("a")->line, 2);
  EXPECT_EQ(set.Find("zzz"), nullptr);
}

TEST_F(ResponsesTest, MissingResponsesAreAllowed) {
  HB_ASSERT_OK_AND_ASSIGN(ResponseSet set, Load(R"({"prompt_id": "a", "response": "r"})"));
  EXPECT_THAT(set.responses, SizeIs(1));
  EXPECT_EQ(set.Find("b"), nullptr);
}

TEST_F(ResponsesTest, UnknownPromptId) {
  EXPECT_THAT(Load("{\"prompt_id\": \"a\", \"response\": \"r\"}\n"
                   "{\"prompt_id\": \"nope\", \"response\": \"r\"}\n"),
              StatusIs(kInvalidArgument, HasSubstr("responses.jsonl:2: unknown prompt_id 'nope'")));
}

TEST_F(ResponsesTest, ExtraResponsesAreCountedAndSkippedWhenAsked) {
  const std::string path = Write(
      "{\"prompt_id\": \"x\", \"response\": \"r\"}\n"
      "{\"prompt_id\": \"a\", \"response\": \"r\"}\n"
      "{\"prompt_id\": \"y\", \"response\": \"r\"}\n");
  HB_ASSERT_OK_AND_ASSIGN(ResponseSet set, LoadResponses(path, dataset_, {true}));
  EXPECT_EQ(set.ignored_extra, 2);
  ASSERT_THAT(set.responses, SizeIs(1));
  EXPECT_EQ(set.Find("a")->line, 2);
  EXPECT_EQ(set.Find("x"), nullptr);
  // Without the option the first extra line is the error, and says how to skip it.
  EXPECT_THAT(LoadResponses(path, dataset_, {false}),
              StatusIs(kInvalidArgument, HasSubstr(":1: unknown prompt_id 'x' (not in ")));
  EXPECT_THAT(LoadResponses(path, dataset_, {false}),
              StatusIs(kInvalidArgument, HasSubstr("pass --ignore-extra-responses)")));
  // Extra lines are still checked: a duplicate among them is an error naming the first.
  EXPECT_THAT(
      LoadResponses(Write("{\"prompt_id\": \"x\", \"response\": \"r\"}\n"
                          "{\"prompt_id\": \"x\", \"response\": \"s\"}\n"),
                    dataset_, {true}),
      StatusIs(kInvalidArgument, HasSubstr(":2: duplicate prompt_id 'x' (first on line 1)")));
  EXPECT_THAT(LoadResponses(Write("{\"prompt_id\": \"x\", \"response\": 3}\n"), dataset_, {true}),
              StatusIs(kInvalidArgument, HasSubstr(":1: field 'response'")));
}

TEST_F(ResponsesTest, DuplicatePromptIdNamesTheFirstLine) {
  EXPECT_THAT(Load("{\"prompt_id\": \"a\", \"response\": \"r\"}\n"
                   "{\"prompt_id\": \"b\", \"response\": \"r\"}\n"
                   "{\"prompt_id\": \"a\", \"response\": \"r2\"}\n"),
              StatusIs(kInvalidArgument, HasSubstr("responses.jsonl:3: duplicate prompt_id 'a' "
                                                   "(first on line 1)")));
}

TEST_F(ResponsesTest, MistypedAndMissingFields) {
  struct Case {
    std::string line, message;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"response": "r"})", "responses.jsonl:1: field 'prompt_id': missing"},
           {R"({"prompt_id": 1, "response": "r"})",
            "responses.jsonl:1: field 'prompt_id': expected a string, got number"},
           {R"({"prompt_id": "a"})", "responses.jsonl:1: field 'response': missing"},
           {R"({"prompt_id": "a", "response": null})",
            "responses.jsonl:1: field 'response': expected a string, got null"},
           {R"({"prompt_id": "a", "response": "r", "system_prompt": ["S"]})",
            "responses.jsonl:1: field 'system_prompt': expected a string, got array"},
           {R"(["a", "r"])", "responses.jsonl:1: expected a JSON object, got array"},
           {R"({"prompt_id": "a", "response": "r")", "responses.jsonl:1: invalid JSON: "},
       }) {
    EXPECT_THAT(Load(c.line + "\n"), StatusIs(kInvalidArgument, HasSubstr(c.message))) << c.line;
  }
}

TEST_F(ResponsesTest, BlankLineIsAnError) {
  EXPECT_THAT(Load("{\"prompt_id\": \"a\", \"response\": \"r\"}\n\n"),
              StatusIs(kInvalidArgument, HasSubstr("responses.jsonl:2: blank line")));
}

TEST_F(ResponsesTest, ReadErrors) {
  EXPECT_THAT(LoadResponses(dir_ + "/absent.jsonl", dataset_),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.jsonl")));
}

TEST_F(ResponsesTest, WorksAgainstARealDataset) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset real,
                          LoadDataset(hb::testing::SharedDataFile(hb::testing::kHardHead4), {}));
  std::string text;
  for (const Example& example : real.examples) {
    text += absl::StrCat(R"({"prompt_id": ")", example.prompt_id, R"(", "response": "ok"})", "\n");
  }
  HB_ASSERT_OK_AND_ASSIGN(ResponseSet set, LoadResponses(Write(text), real));
  EXPECT_THAT(set.responses, SizeIs(real.examples.size()));
  for (const Example& example : real.examples) EXPECT_NE(set.Find(example.prompt_id), nullptr);
}

}  // namespace
}  // namespace hb
