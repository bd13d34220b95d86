#include "orchestrator/run/row_plan.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/run/row_request.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const std::vector<CheckpointSpec>& specs) {
  std::vector<std::string> out;
  for (const CheckpointSpec& s : specs) out.push_back(s.name + "=" + s.path);
  return out;
}

TEST(ParseCheckpointSpecsTest, NamesFromFlagOrFileStem) {
  HB_ASSERT_OK_AND_ASSIGN(std::vector<CheckpointSpec> specs,
                          ParseCheckpointSpecs({"runs/step-100.jsonl.gz", "tuned=out/x.jsonl",
                                                "a/b/base.json", "plain"}));
  EXPECT_THAT(Names(specs), ElementsAre("step-100=runs/step-100.jsonl.gz", "tuned=out/x.jsonl",
                                        "base=a/b/base.json", "plain=plain"));
}

TEST(ParseCheckpointSpecsTest, RejectsDuplicateNames) {
  EXPECT_THAT(ParseCheckpointSpecs({"a/m.jsonl", "b/m.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--responses 'b/m.jsonl': checkpoint name 'm' is also used by "
                                 "'a/m.jsonl'")));
}

TEST(ParseCheckpointSpecsTest, RejectsUnsafeNames) {
  EXPECT_THAT(ParseCheckpointSpecs({"a b=x.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("checkpoint name 'a b' may only use letters, digits")));
  EXPECT_THAT(ParseCheckpointSpecs({"../up=x.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'../up'")));
  EXPECT_THAT(ParseCheckpointSpecs({"..=x.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must not start with '.'")));
  EXPECT_THAT(ParseCheckpointSpecs({"=x.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is empty")));
  EXPECT_THAT(ParseCheckpointSpecs({"x="}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no file path")));
  EXPECT_THAT(ParseCheckpointSpecs({"journal.sqlite=x.jsonl"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reserved")));
  EXPECT_THAT(ParseCheckpointSpecs({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no --responses")));
}

TEST(PlanRowsTest, SkipsDoneRowsAndTasksWithoutResponse) {
  std::vector<Example> examples(3);
  for (int t = 0; t < 3; ++t) {
    examples[t].prompt_id = "p" + std::to_string(t);
    examples[t].rubrics.resize(t + 1);
  }
  std::vector<Response> responses(3);
  for (int t = 0; t < 3; ++t) responses[t].prompt_id = examples[t].prompt_id;
  const std::string a = "a", b = "b";
  std::vector<CheckpointRows> checkpoints = {
      {&a,
       [&](const std::string& id) -> const Response* {
         return id == "p1" ? nullptr : &responses[id[1] - '0'];  // no response for p1
       }},
      {&b, [&](const std::string& id) -> const Response* { return &responses[id[1] - '0']; }},
  };
  absl::flat_hash_set<RowKey> done = {RowKey{"a", "p2", 1}, RowKey{"b", "p0", 0}};
  std::vector<const Example*> tasks = {&examples[2], &examples[0], &examples[1]};
  std::vector<PlannedRow> rows = PlanRows(tasks, checkpoints, done);
  std::vector<std::string> keys;
  for (const PlannedRow& r : rows) {
    keys.push_back(r.Key().checkpoint + "/" + r.Key().prompt_id + "/" +
                   std::to_string(r.rubric_index));
  }
  EXPECT_THAT(keys, ElementsAre("a/p2/0", "a/p2/2", "a/p0/0", "b/p2/0", "b/p2/1", "b/p2/2",
                                "b/p1/0", "b/p1/1"));
}

TEST(BuildGradeItemRequestTest, CopiesTheRow) {
  Example example;
  example.prompt_id = "pid";
  example.prompt = {{"user", "hi"}, {"assistant", "hello"}, {"user", "help"}};
  RubricItem item;
  item.criterion = "Says hello";
  item.points = 5;
  item.points_text = "5.0";
  item.tags = {"axis:accuracy", "level:example"};
  example.rubrics = {RubricItem{}, item};
  Response response;
  response.prompt_id = "pid";
  response.response = "the reply";
  response.system_prompt = "sys";
  const std::string checkpoint = "ck";
  const PlannedRow row{&checkpoint, &example, &response, 1};
  auto request = BuildGradeItemRequest(row, 2, /*send_prompt_cache_key=*/true);
  ASSERT_EQ(request.conversation_size(), 4);
  EXPECT_EQ(request.conversation(0).role(), "system");
  EXPECT_EQ(request.conversation(3).content(), "help");
  EXPECT_EQ(request.reply(), "the reply");
  EXPECT_EQ(request.rubric_item().criterion(), "Says hello");
  EXPECT_EQ(request.rubric_item().points(), 5);
  EXPECT_EQ(request.rubric_item().points_text(), "5.0");
  EXPECT_THAT(request.rubric_item().tags(), ElementsAre("axis:accuracy", "level:example"));
  EXPECT_FALSE(request.rubric_item().verbatim());
  EXPECT_EQ(request.request_id(), "ck/pid/1/2");
  EXPECT_EQ(request.prompt_cache_key(), "pid");
  // Without the opt-in no key goes upstream, as in the reference.
  EXPECT_EQ(BuildGradeItemRequest(row, 2, false).prompt_cache_key(), "");

  // A meta-eval row's raw rubric keeps its verbatim flag on the wire.
  example.rubrics[1].verbatim = true;
  EXPECT_TRUE(BuildGradeItemRequest(row, 2, false).rubric_item().verbatim());
}

}  // namespace
}  // namespace hb
