// hb-llm-sim's policy mode through Simulator::Handle: route, served models, reply shape,
// determinism, truncation, faults and latency.
#include "simulator/sim_policy.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "simulator/sim_core.h"
#include "tests/testing/fake_clock.h"

namespace hb::sim {
namespace {

using ::hb::testing::FakeClock;
using ::testing::HasSubstr;

std::string PolicyBody(absl::string_view model, absl::string_view user, int max_tokens = 0) {
  return absl::StrCat(R"({"model":")", model, R"(","messages":[{"role":"user","content":")", user,
                      R"("}])", max_tokens > 0 ? absl::StrCat(R"(,"max_tokens":)", max_tokens) : "",
                      "}");
}

struct Parsed {
  int status = 0;
  std::string content, finish_reason, model;
  int64_t completion_tokens = 0;
};

Parsed Post(Simulator& sim, const std::string& body) {
  SimAction action = sim.Handle({"POST", kPolicyChatPath, "", body});
  Parsed out;
  out.status = action.status;
  rapidjson::Document doc;
  doc.Parse(action.body.c_str());
  if (action.status != 200 || doc.HasParseError()) {
    out.content = action.body;
    return out;
  }
  out.content = doc["choices"][0]["message"]["content"].GetString();
  out.finish_reason = doc["choices"][0]["finish_reason"].GetString();
  out.model = doc["model"].GetString();
  out.completion_tokens = doc["usage"]["completion_tokens"].GetInt64();
  return out;
}

TEST(SimPolicyTest, RepliesWithDeterministicProseThatDependsOnModelAndPrompt) {
  FakeClock clock;
  Simulator sim({}, &clock);
  const Parsed a = Post(sim, PolicyBody("ckpt-a", "I have a headache."));
  ASSERT_EQ(a.status, 200) << a.content;
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_EQ(a.model, "ckpt-a");
  EXPECT_EQ(a.completion_tokens, EstimateTokens(a.content));
  EXPECT_GE(a.completion_tokens, 60);
  EXPECT_LE(a.completion_tokens, 800);
  EXPECT_EQ(Post(sim, PolicyBody("ckpt-a", "I have a headache.")).content, a.content);
  EXPECT_NE(Post(sim, PolicyBody("ckpt-b", "I have a headache.")).content, a.content);
  EXPECT_NE(Post(sim, PolicyBody("ckpt-a", "I have a cough.")).content, a.content);
}

TEST(SimPolicyTest, SmallMaxTokensCutsTheReplyWithFinishReasonLength) {
  FakeClock clock;
  Simulator sim({}, &clock);
  const Parsed full = Post(sim, PolicyBody("m", "question"));
  const Parsed cut = Post(sim, PolicyBody("m", "question", 10));
  EXPECT_EQ(cut.finish_reason, "length");
  EXPECT_EQ(cut.content, full.content.substr(0, 40));
  EXPECT_EQ(cut.completion_tokens, 10);
  const Parsed roomy = Post(sim, PolicyBody("m", "question", 100000));
  EXPECT_EQ(roomy.finish_reason, "stop");
}

TEST(SimPolicyTest, EmptyMarkerGivesAnEmptyReply) {
  FakeClock clock;
  Simulator sim({}, &clock);
  const Parsed empty = Post(sim, PolicyBody("m", "say nothing [[sim:policy=empty]]"));
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.content, "");
  EXPECT_EQ(empty.finish_reason, "stop");
}

TEST(SimPolicyTest, UnknownModelIs404ModelNotFound) {
  FakeClock clock;
  SimulatorOptions options;
  options.policy_models = {"ckpt-a", "ckpt-b"};
  Simulator sim(options, &clock);
  EXPECT_EQ(Post(sim, PolicyBody("ckpt-b", "q")).status, 200);
  const Parsed missing = Post(sim, PolicyBody("gpt-9", "q"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.content, HasSubstr("\"code\":\"model_not_found\""));
  EXPECT_THAT(missing.content, HasSubstr("The model `gpt-9` does not exist"));
  // The grader route is not restricted by --policy-models.
  EXPECT_EQ(sim.Handle({"POST", "/v1/chat/completions", "", PolicyBody("gpt-9", "q")}).status, 200);
}

TEST(SimPolicyTest, TransportFaultsAndPolicyLatencyApply) {
  FakeClock clock;
  SimulatorOptions options;
  options.faults.status_429 = 1;
  options.latency_ms = 5;
  Simulator sim(options, &clock);
  EXPECT_EQ(Post(sim, PolicyBody("m", "q")).status, 429);

  SimulatorOptions slow;
  slow.latency_ms = 5;
  slow.policy_latency_ms = 2000;
  Simulator sim2(slow, &clock);
  EXPECT_EQ(sim2.Handle({"POST", kPolicyChatPath, "", PolicyBody("m", "q")}).delay,
            absl::Seconds(2));
  EXPECT_EQ(sim2.Handle({"POST", "/v1/chat/completions", "", PolicyBody("m", "q")}).delay,
            absl::Milliseconds(5));
}

TEST(SimPolicyTest, ContentFaultsLeaveThePolicyReplyAlone) {
  FakeClock clock;
  SimulatorOptions options;
  options.faults.malformed = 1;
  Simulator faulty(options, &clock);
  Simulator clean({}, &clock);
  EXPECT_EQ(Post(faulty, PolicyBody("m", "q")).content, Post(clean, PolicyBody("m", "q")).content);
}

}  // namespace
}  // namespace hb::sim
