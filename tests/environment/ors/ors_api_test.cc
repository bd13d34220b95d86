// The ORS logic (OrsApi over a FakeEnvironment) and the socket-free wire helpers: every message
// shape the ORS client reads, and every input error with its exact message.
#include "environment/ors/ors_api.h"

#include <string>

#include "common/retry/retry_status.h"
#include "environment/ors/ors_wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/fake_environment.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::FakeEnvironment;
using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class OrsApiTest : public ::testing::Test {
 protected:
  OrsApiTest() {
    env_.AddTask("dev", {"p0", {"theme:a"}, "user: zero"});
    env_.AddTask("dev", {"p1", {"theme:b", "physician_agreed_category:x"}, "user: one"});
    env_.AddTask("dev", {"p2", {}, "user: two \"quoted\"\nline"});
    env_.AddTask("test", {"t0", {}, "user: t"});
  }
  FakeEnvironment env_;
  OrsApi api_{env_, "healthbench"};
};

TEST_F(OrsApiTest, StaticRoutes) {
  EXPECT_EQ(OrsApi::Health(), R"({"status":"ok"})");
  EXPECT_EQ(api_.ListEnvironments(), R"(["healthbench"])");
  EXPECT_EQ(api_.Splits(), R"([{"name":"dev","type":"validation"},{"name":"test","type":"test"}])");
  EXPECT_EQ(OrsApi::Tools(),
            R"({"tools":[{"name":"answer","description":"Submit your reply to the conversation: )"
            R"(it is graded as the next assistant turn against the task's rubric, and the )"
            R"(episode ends.","input_schema":{"properties":{"answer":{"title":"Answer","type":)"
            R"("string"}},"required":["answer"],"title":"AnswerInput","type":"object"}}]})");
  EXPECT_TRUE(api_.CheckEnvName("HealthBench").ok());
  EXPECT_THAT(api_.CheckEnvName("gsm8k"),
              StatusIs(absl::StatusCode::kNotFound, "unknown environment \"gsm8k\""));
}

TEST_F(OrsApiTest, TaskListings) {
  EXPECT_THAT(
      api_.Tasks(R"({"split":"dev"})"),
      IsOkAndHolds(
          R"({"tasks":[{"prompt_id":"p0","split":"dev","tags":["theme:a"]},)"
          R"({"prompt_id":"p1","split":"dev","tags":["theme:b","physician_agreed_category:x"]},)"
          R"({"prompt_id":"p2","split":"dev","tags":[]}],"env_name":"healthbench"})"));
  EXPECT_THAT(api_.NumTasks(R"({"split":"dev"})"), IsOkAndHolds(R"({"num_tasks":3})"));
  EXPECT_THAT(
      api_.Task(R"({"split":"dev","index":1})"),
      IsOkAndHolds(
          R"({"task":{"prompt_id":"p1","split":"dev","tags":["theme:b","physician_agreed_category:x"]}})"));
  EXPECT_THAT(api_.Task(R"({"split":"dev","index":-1})"),
              IsOkAndHolds(R"({"task":{"prompt_id":"p2","split":"dev","tags":[]}})"));
}

TEST_F(OrsApiTest, TaskRangeHasPythonSliceSemantics) {
  auto ids = [&](const std::string& body) { return api_.TaskRange(body); };
  EXPECT_THAT(ids(R"({"split":"dev"})"), IsOkAndHolds(HasSubstr("p0")));
  EXPECT_THAT(
      ids(R"({"split":"dev","start":1,"stop":2})"),
      IsOkAndHolds(
          R"({"tasks":[{"prompt_id":"p1","split":"dev","tags":["theme:b","physician_agreed_category:x"]}]})"));
  EXPECT_THAT(ids(R"({"split":"dev","start":-1})"),
              IsOkAndHolds(R"({"tasks":[{"prompt_id":"p2","split":"dev","tags":[]}]})"));
  EXPECT_THAT(ids(R"({"split":"dev","start":5,"stop":99})"), IsOkAndHolds(R"({"tasks":[]})"));
  EXPECT_THAT(ids(R"({"split":"dev","start":2,"stop":1})"), IsOkAndHolds(R"({"tasks":[]})"));
  EXPECT_THAT(ids(R"({"split":"dev","start":null,"stop":-2})"),
              IsOkAndHolds(R"({"tasks":[{"prompt_id":"p0","split":"dev","tags":["theme:a"]}]})"));
}

TEST_F(OrsApiTest, InputErrorsAreExact) {
  EXPECT_THAT(
      api_.Tasks(R"({"split":"nope"})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "Invalid split: \"nope\" (splits: dev, test)"));
  EXPECT_THAT(api_.Task(R"({"split":"dev","index":3})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Invalid index: 3 is outside split \"dev\" of 3 tasks"));
  EXPECT_THAT(api_.Task(R"({"split":"dev","index":-4})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Invalid index: -4 is outside split \"dev\" of 3 tasks"));
  EXPECT_THAT(api_.Task(R"({"split":"dev"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'index' must be an integer"));
  EXPECT_THAT(api_.NumTasks(R"({"split":"dev")"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "malformed JSON request body at offset 14: Missing a comma or '}' after "
                       "an object member."));
  EXPECT_THAT(api_.NumTasks("[]"),
              StatusIs(absl::StatusCode::kInvalidArgument, "request body must be a JSON object"));
  EXPECT_THAT(
      api_.NumTasks(R"({"split":"dev","extra":1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "request body: unknown field \"extra\""));
  EXPECT_THAT(
      api_.NumTasks(R"({"split":7})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "request body: field 'split' must be a string"));
}

TEST_F(OrsApiTest, CreateResolvesATaskBySpecOrByIndex) {
  EXPECT_THAT(
      api_.ResolveCreate(
          R"({"task_spec":{"prompt_id":"p1","split":"dev","tags":[]},"env_name":"healthbench"})"),
      IsOkAndHolds(TaskRef::InSplit("dev", "p1")));
  EXPECT_THAT(api_.ResolveCreate(R"({"split":"test","index":0})"),
              IsOkAndHolds(TaskRef::InSplit("test", "t0")));
  EXPECT_THAT(api_.ResolveCreate(R"({"task_spec":{"prompt_id":"zz"}})"),
              StatusIs(absl::StatusCode::kNotFound, "unknown task id 'zz'"));
  EXPECT_THAT(api_.ResolveCreate(R"({"split":"dev","index":9})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Invalid index: 9 is outside split \"dev\" of 3 tasks"));
  EXPECT_THAT(api_.ResolveCreate(R"({"split":"x","index":0})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Invalid split: \"x\"")));
  EXPECT_THAT(api_.ResolveCreate(R"({"task_spec":{"prompt_id":"p1"},"split":"dev","index":0})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Provide either task_spec or both split and index, not both/neither"));
  EXPECT_THAT(api_.ResolveCreate("{}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Provide either task_spec or both split and index, not both/neither"));
  EXPECT_THAT(api_.ResolveCreate(R"({"split":"dev"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "split and index must both be provided together"));
  EXPECT_THAT(api_.ResolveCreate(R"({"task_spec":{"id":"p1"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'task_spec.prompt_id' must be a string"));
  EXPECT_THAT(api_.ResolveCreate(R"({"env_name":"other","split":"dev","index":0})"),
              StatusIs(absl::StatusCode::kNotFound, "unknown environment \"other\""));
}

// A spec's "split" picks the task of that prompt_id in that split (splits may overlap).
TEST(OrsApiSplitsTest, ASpecIsResolvedWithinItsSplit) {
  FakeEnvironment env;
  env.AddTask("main", {"p1", {}, "user: main's"});
  env.AddTask("consensus", {"p1", {}, "user: consensus's"});
  OrsApi api(env, "healthbench");
  EXPECT_THAT(api.ResolveCreate(R"({"task_spec":{"prompt_id":"p1","split":"consensus"}})"),
              IsOkAndHolds(TaskRef::InSplit("consensus", "p1")));
  EXPECT_THAT(api.ResolveCreate(R"({"split":"consensus","index":0})"),
              IsOkAndHolds(TaskRef::InSplit("consensus", "p1")));
  EXPECT_THAT(api.Prompt(TaskRef::InSplit("consensus", "p1")),
              IsOkAndHolds(HasSubstr("consensus's")));
  EXPECT_THAT(api.ResolveCreate(R"({"task_spec":{"prompt_id":"p1","split":"hard"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Invalid split: \"hard\" (splits: main, consensus)"));
  EXPECT_THAT(api.ResolveCreate(R"({"task_spec":{"prompt_id":"p1","split":7}})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'task_spec.split' must be a string"));
}

TEST_F(OrsApiTest, PromptIsOneTextBlockHoldingPromptTextExactly) {
  const absl::StatusOr<std::string> prompt = api_.Prompt(TaskRef::ById("p2"));
  ASSERT_TRUE(prompt.ok()) << prompt.status();
  rapidjson::Document doc;
  doc.Parse(prompt->c_str());
  ASSERT_TRUE(doc.IsArray());
  ASSERT_EQ(doc.Size(), 1u);
  EXPECT_STREQ(doc[0]["type"].GetString(), "text");
  EXPECT_STREQ(doc[0]["text"].GetString(), "user: two \"quoted\"\nline");
  EXPECT_TRUE(doc[0]["detail"].IsNull());
}

TEST(OrsToolCallTest, ParsesCallsAndReportsToolErrorsInBand) {
  auto call = OrsApi::ParseToolCall(R"({"name":"answer","input":{"answer":""}})");
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->answer, "");
  EXPECT_FALSE(call->tool_error.has_value());
  EXPECT_EQ(call->call_id, "");
  call = OrsApi::ParseToolCall(R"({"name":"answer","input":{"answer":"x"},"task_id":"c1"})");
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->call_id, "c1");
  call = OrsApi::ParseToolCall(R"({"name":"search","input":{}})");
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->tool_error, "'search' is not a valid tool (available tools: answer)");
  call = OrsApi::ParseToolCall(R"({"name":"answer","input":{"answer":3}})");
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->tool_error, "Tool input validation error: input field 'answer' must be a string");
  EXPECT_THAT(OrsApi::ParseToolCall(R"({"name":"answer"})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "request body: field 'input' must be an object"));
}

TEST(OrsToolCallTest, RunToolOutputShapes) {
  SubmitResult result;
  result.reward = -0.5;
  result.reward_clipped = 0;
  result.points_met = -3;
  result.points_possible = 6;
  result.items = {{"Says \"hi\"", 6, false, "no"}, {"Is rude", -3, true, "yes"}};
  EXPECT_EQ(OrsApi::RunToolOutput(result),
            R"({"ok":true,"output":{"blocks":[{"text":"Graded: reward -0.5 (-3.0 of 6.0 points; )"
            R"(1 of 2 rubric items met).","detail":null,"type":"text"}],"metadata":)"
            R"({"reward_clipped":0.0,"points_met":-3.0,"points_possible":6.0,"items":[)"
            R"({"criterion":"Says \"hi\"","points":6,"met":false,"explanation":"no"},)"
            R"({"criterion":"Is rude","points":-3,"met":true,"explanation":"yes"}]},)"
            R"("reward":-0.5,"finished":true}})");
  EXPECT_EQ(OrsApi::RunToolOutput(absl::UnavailableError("judge down")),
            R"({"ok":false,"error":"UNAVAILABLE: judge down"})");
}

TEST(OrsWireTest, StatusTable) {
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kOk), 200);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kAlreadyExists), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kCancelled), 503);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusOf(absl::StatusCode::kInternal), 500);
  EXPECT_EQ(ErrorBody("a \"b\""), R"({"detail":"a \"b\""})");
  EXPECT_EQ(RetryAfterSeconds(absl::ResourceExhaustedError("busy")), "1");
  absl::Status with_delay = absl::ResourceExhaustedError("busy");
  SetRetryDelay(with_delay, absl::Milliseconds(2500));
  EXPECT_EQ(RetryAfterSeconds(with_delay), "3");
}

TEST(OrsWireTest, SseFraming) {
  EXPECT_EQ(SseEvent("task_id", "abc"), "event: task_id\r\ndata: abc\r\n\r\n");
  EXPECT_EQ(SseEvent("end", ""), "event: end\r\ndata: \r\n\r\n");
  EXPECT_EQ(SseEvent("error", "a\nb"), "event: error\r\ndata: a\r\ndata: b\r\n\r\n");
  EXPECT_EQ(SsePing(), ": ping\r\n\r\n");
}

TEST(OrsWireTest, ChunksKeepUtf8WholeAndNeverStartWithABlank) {
  EXPECT_THAT(SseChunks("", 8), ElementsAre(""));
  EXPECT_THAT(SseChunks("abcdefgh", 8), ElementsAre("abcdefgh"));
  EXPECT_THAT(SseChunks("abcdefghij", 8), ElementsAre("abcdefgh", "ij"));
  EXPECT_THAT(SseChunks("abcdefg\xC3\xA9", 8), ElementsAre("abcdefg", "\xC3\xA9"));
  EXPECT_THAT(SseChunks("abcdefgh \xC3\xA9", 8), ElementsAre("abcdefg", "h \xC3\xA9"));
  EXPECT_THAT(SseChunks("abcdefg \xC3\xA9", 8), ElementsAre("abcdefg ", "\xC3\xA9"));
  // Nothing but blanks: no good cut exists, so the cut falls at the limit.
  EXPECT_THAT(SseChunks("          ", 8), ElementsAre("        ", "  "));
}

}  // namespace
}  // namespace hb::env
