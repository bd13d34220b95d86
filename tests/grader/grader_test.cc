// Grader logic with a FakeLlmClient, a FakeScheduler and a FakeClock: every retry and error
// rule with exact delays, deadlines, cancellation, validation.
#include "grader/grader.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/base/sha256.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/retry/retry_status.h"
#include "gmock/gmock.h"
#include "grader/grader_metrics.h"
#include "grader/grader_proto.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/in_memory_verdict_cache.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::ConnectionFailure;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::hb::testing::StatusIs;
using ::hb::testing::TimeoutFailure;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kTemplate[] = "CONVERSATION:\n<<conversation>>\nITEM: <<rubric_item>>\nEND";
constexpr char kMet[] = R"({"explanation": "it does", "criteria_met": true})";
constexpr char kNotMet[] = R"({"explanation": "it does not", "criteria_met": false})";

// Records the single completion of a GradeItem.
struct Result {
  int calls = 0;
  std::optional<absl::StatusOr<ItemVerdict>> value;
  ItemCallback Callback() {
    return [this](absl::StatusOr<ItemVerdict> v) {
      ++calls;
      value = std::move(v);
    };
  }
  bool done() const { return calls > 0; }
  const absl::StatusOr<ItemVerdict>& get() const { return *value; }
};

GradeItemInput SampleInput() {
  GradeItemInput input;
  input.conversation = {{"system", "You are a helpful assistant."},
                        {"user", "I have a headache, what should I do?"}};
  input.reply = "Drink water and rest.";
  input.item.criterion = "Advises hydration.";
  input.item.points = 5;
  input.request_id = "req-1";
  return input;
}

class GraderTest : public ::testing::Test {
 protected:
  GraderTest() : scheduler_(clock_) { config_.attempt_timeout = absl::Seconds(120); }

  // Builds the grader; call after adjusting config_ / jitter_.
  Grader& grader() {
    if (grader_ == nullptr) {
      auto tmpl = GraderTemplate::FromText(kTemplate, /*require_reference=*/false);
      EXPECT_TRUE(tmpl.ok()) << tmpl.status();
      grader_ = std::make_unique<Grader>(
          llm_, scheduler_, clock_, [this] { return jitter_; }, *std::move(tmpl), config_,
          &metrics_, cache_);
    }
    return *grader_;
  }

  FakeClock clock_;
  FakeScheduler scheduler_;
  FakeLlmClient llm_;
  double jitter_ = 0.5;
  GraderConfig config_;
  prometheus::Registry registry_;
  GraderMetrics metrics_{registry_};
  VerdictCache* cache_ = nullptr;
  std::unique_ptr<Grader> grader_;
};

TEST_F(GraderTest, GradesOnFirstAttemptWithTheExactBody) {
  Result result;
  GradeItemInput input = SampleInput();
  input.prompt_cache_key = "prompt-42";
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_EQ(llm_.pending(), 1u);
  const std::string expected_prompt =
      "CONVERSATION:\nsystem: You are a helpful assistant.\n\nuser: I have a headache, what "
      "should I do?\n\nassistant: Drink water and rest.\nITEM: [5] Advises hydration.\nEND";
  EXPECT_EQ(llm_.requests()[0].body,
            BuildChatCompletionBody(GraderSettings{}, expected_prompt, "prompt-42"));
  EXPECT_EQ(llm_.requests()[0].timeout, absl::Seconds(120));
  clock_.Advance(absl::Milliseconds(700));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));
  ASSERT_EQ(result.calls, 1);
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_TRUE(verdict.verdict.criteria_met);
  EXPECT_EQ(verdict.verdict.explanation, "it does");
  EXPECT_EQ(verdict.raw_reply, kMet);
  EXPECT_EQ(verdict.attempts, 1);
  EXPECT_EQ(verdict.model, "fake-grader");
  EXPECT_EQ(verdict.usage.prompt_tokens, 100);
  EXPECT_EQ(verdict.usage.completion_tokens, 20);
  EXPECT_EQ(verdict.upstream_latency, absl::Milliseconds(700));
  EXPECT_THAT(scheduler_.RequestedDelays(), IsEmpty());
}

TEST_F(GraderTest, VerdictCacheAnswersTheSameRequestWithoutAnUpstreamCall) {
  hb::testing::InMemoryVerdictCache cache;
  cache_ = &cache;
  GradeItemInput input = SampleInput();
  input.prompt_cache_key = "first";
  Result first;
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, first.Callback());
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict graded, first.get());
  EXPECT_FALSE(graded.from_cache);
  // Stored under the body without prompt_cache_key: the key cannot change a verdict.
  const std::string prompt =
      "CONVERSATION:\nsystem: You are a helpful assistant.\n\nuser: I have a headache, what "
      "should I do?\n\nassistant: Drink water and rest.\nITEM: [5] Advises hydration.\nEND";
  const std::string key = VerdictCacheKey(GraderSettings{}, prompt);
  EXPECT_EQ(key, Sha256Hex(BuildChatCompletionBody(GraderSettings{}, prompt)));
  ASSERT_EQ(cache.entries().count(key), 1u);
  EXPECT_EQ(cache.entries().at(key).raw_reply, kMet);

  input.prompt_cache_key = "another";
  Result second;
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, second.Callback());
  EXPECT_EQ(llm_.requests().size(), 1u);  // no upstream request
  EXPECT_FALSE(second.done());            // answered on the scheduler's thread, never inline
  scheduler_.RunDue();
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict hit, second.get());
  EXPECT_TRUE(hit.from_cache);
  EXPECT_EQ(hit.attempts, 0);
  EXPECT_EQ(hit.verdict.criteria_met, graded.verdict.criteria_met);
  EXPECT_EQ(hit.verdict.explanation, graded.verdict.explanation);
  EXPECT_EQ(hit.raw_reply, graded.raw_reply);
  EXPECT_EQ(hit.model, graded.model);
  EXPECT_EQ(hit.usage.prompt_tokens, graded.usage.prompt_tokens);
  EXPECT_EQ(hit.usage.completion_tokens, graded.usage.completion_tokens);
  EXPECT_EQ(metrics_.VerdictCacheHits(), 1);

  // Another criterion is another request: graded upstream.
  input.item.criterion = "Advises rest.";
  Result third;
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, third.Callback());
  EXPECT_EQ(llm_.requests().size(), 2u);
}

TEST_F(GraderTest, VerdictCacheKeyCoversTheSettingsAndAnUnparsableEntryIsGradedAgain) {
  GraderSettings other = GraderSettings{};
  other.temperature = 0.0;
  EXPECT_NE(VerdictCacheKey(GraderSettings{}, "p"), VerdictCacheKey(other, "p"));
  other = GraderSettings{};
  other.model = "another-model";
  EXPECT_NE(VerdictCacheKey(GraderSettings{}, "p"), VerdictCacheKey(other, "p"));
  EXPECT_NE(VerdictCacheKey(GraderSettings{}, "p"), VerdictCacheKey(GraderSettings{}, "q"));

  hb::testing::InMemoryVerdictCache cache;
  cache_ = &cache;
  GradeItemInput input = SampleInput();
  const std::string key = VerdictCacheKey(
      GraderSettings{},
      "CONVERSATION:\nsystem: You are a helpful assistant.\n\nuser: I have a headache, what "
      "should I do?\n\nassistant: Drink water and rest.\nITEM: [5] Advises hydration.\nEND");
  cache.Store(key, CachedVerdict{"not json", "m", {}});
  Result result;
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_EQ(llm_.pending(), 1u);
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kNotMet)));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_FALSE(verdict.from_cache);
  EXPECT_FALSE(verdict.verdict.criteria_met);
}

TEST_F(GraderTest, RequestBodyMatchesTheReferenceTemplateRendering) {
  auto tmpl = GraderTemplate::Load(hb::testing::ReferenceTemplatePath(), true);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  Grader grader(
      llm_, scheduler_, clock_, [] { return 0.5; }, *tmpl, config_);
  GradeItemInput input = SampleInput();
  Result result;
  grader.GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_EQ(llm_.requests().size(), 1u);
  std::string prompt = tmpl->Fill(
      RenderConversation(GradedConversation(input.conversation, std::nullopt, input.reply)),
      RenderRubricItem(input.item));
  EXPECT_EQ(llm_.requests()[0].body, BuildChatCompletionBody(GraderSettings{}, prompt));
  EXPECT_EQ(grader.RequestBody(input), llm_.requests()[0].body);
}

// The meta-eval's rendering (healthbench_meta_eval.py): the row's prompt plus the completion as
// the assistant turn, then the rubric string as it stands in the file, through the wire request.
TEST_F(GraderTest, AVerbatimItemIsTheMetaEvalPromptByteForByte) {
  auto tmpl = GraderTemplate::Load(hb::testing::ReferenceTemplatePath(), true);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  Grader grader(
      llm_, scheduler_, clock_, [] { return 0.5; }, *tmpl, config_);
  MetaEvalRow row;
  row.prompt = {{"user", "My child swallowed a battery."}};
  row.completion = "Go to the emergency department now.";
  row.rubric = "Advises immediate emergency care. [5]";
  healthbench::grader::v1::GradeItemRequest request;
  auto* message = request.add_conversation();
  message->set_role("user");
  message->set_content(row.prompt[0].content);
  request.set_reply(row.completion);
  const RubricItem item = MetaEvalRubricItem(row);
  request.mutable_rubric_item()->set_criterion(item.criterion);
  request.mutable_rubric_item()->set_points(item.points);
  request.mutable_rubric_item()->set_verbatim(true);
  const GradeItemInput input = GradeItemInputFromProto(request);
  EXPECT_TRUE(input.item.verbatim);
  Result result;
  grader.GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_EQ(llm_.requests().size(), 1u);
  const std::string prompt = MetaEvalGraderPrompt(*tmpl, row);
  EXPECT_EQ(prompt, tmpl->Fill("user: My child swallowed a battery.\n\nassistant: Go to the "
                               "emergency department now.",
                               "Advises immediate emergency care. [5]"));
  EXPECT_EQ(llm_.requests()[0].body, BuildChatCompletionBody(GraderSettings{}, prompt));
  EXPECT_EQ(grader.RequestBody(input), llm_.requests()[0].body);
}

TEST_F(GraderTest, AVerbatimItemNeverSharesACachedVerdictWithARenderedOne) {
  hb::testing::InMemoryVerdictCache cache;
  cache_ = &cache;
  // The same prompt both ways: "[5] Advises hydration." rendered, and as a raw rubric.
  GradeItemInput rendered = SampleInput();
  GradeItemInput raw = SampleInput();
  raw.item.criterion = "[5] Advises hydration.";
  raw.item.verbatim = true;
  EXPECT_EQ(grader().RequestBody(rendered), grader().RequestBody(raw));
  const std::string prompt =
      "CONVERSATION:\nsystem: You are a helpful assistant.\n\nuser: I have a headache, what "
      "should I do?\n\nassistant: Drink water and rest.\nITEM: [5] Advises hydration.\nEND";
  EXPECT_EQ(VerdictCacheKey(GraderSettings{}, prompt, /*verbatim=*/true),
            Sha256Hex("verbatim\n" + BuildChatCompletionBody(GraderSettings{}, prompt)));

  Result first;
  grader().GradeItem(rendered, absl::InfiniteFuture(), nullptr, first.Callback());
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));
  Result second;
  grader().GradeItem(raw, absl::InfiniteFuture(), nullptr, second.Callback());
  ASSERT_EQ(llm_.requests().size(), 2u);  // graded upstream, not answered from the cache
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kNotMet)));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, second.get());
  EXPECT_FALSE(verdict.from_cache);
  EXPECT_FALSE(verdict.verdict.criteria_met);
  EXPECT_EQ(cache.entries().size(), 2u);
  EXPECT_EQ(
      cache.entries().at(VerdictCacheKey(GraderSettings{}, prompt, /*verbatim=*/true)).raw_reply,
      kNotMet);
  EXPECT_EQ(cache.entries().at(VerdictCacheKey(GraderSettings{}, prompt)).raw_reply, kMet);

  // Each is answered from its own entry afterwards.
  Result third;
  grader().GradeItem(raw, absl::InfiniteFuture(), nullptr, third.Callback());
  scheduler_.RunDue();
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict hit, third.get());
  EXPECT_TRUE(hit.from_cache);
  EXPECT_FALSE(hit.verdict.criteria_met);
  EXPECT_EQ(llm_.requests().size(), 2u);
}

TEST_F(GraderTest, OnePreparedReplyIsSharedByEveryItemNeverCopied) {
  // 64 items of a 1 MB conversation: each call holds the one prepared reply (a reference, not
  // a copy of the conversation) and renders its body per attempt into the upstream request.
  GradeItemInput input = SampleInput();
  input.conversation.back().content = std::string(1 << 20, 'q');
  auto prepared = grader().Prepare(input.conversation, input.reply, input.prompt_cache_key);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  std::shared_ptr<const PreparedReply> shared = *std::move(prepared);
  std::vector<Result> results(64);
  for (int i = 0; i < 64; ++i) {
    RubricItem item = input.item;
    item.criterion = absl::StrCat("criterion ", i);
    grader().GradePrepared(shared, item, absl::StrCat("r/", i), absl::InfiniteFuture(), nullptr,
                           results[i].Callback());
  }
  EXPECT_EQ(shared.use_count(), 1 + 64);
  ASSERT_EQ(llm_.requests().size(), 64u);
  GradeItemInput first = input;
  first.item.criterion = "criterion 0";
  EXPECT_EQ(llm_.requests()[0].body, grader().RequestBody(first));  // byte-identical
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));
  for (const Result& r : results) ASSERT_TRUE(r.done() && r.get().ok());
  EXPECT_EQ(shared.use_count(), 1);  // released with the calls
}

TEST_F(GraderTest, PromptSizeCountsEveryRubricItemSubstitution) {
  config_.limits.max_prompt_bytes = 10000;
  GradeItemInput input = SampleInput();
  input.item.criterion = std::string(1000, 'c');
  EXPECT_TRUE(grader().Validate(input).ok());
  // Ten <<rubric_item>> in the conversation put the 1000-byte item in the prompt 11 times.
  for (int i = 0; i < 10; ++i) input.conversation.back().content += "<<rubric_item>>";
  EXPECT_THAT(grader().Validate(input),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("substituted 11 times); the limit is 10000 (max_prompt_bytes)")));
  auto prepared = grader().Prepare(input.conversation, input.reply, "");
  ASSERT_TRUE(prepared.ok());
  // The computed size is the rendered size.
  const std::string rubric_item = RenderRubricItem(input.item);
  EXPECT_EQ((*prepared)->prompt.FilledBytes(rubric_item.size()),
            GraderTemplate::FillRubricItem((*prepared)->prompt, rubric_item).size());
}

TEST_F(GraderTest, AConversationOverThePromptBudgetIsRefusedBeforeRendering) {
  config_.limits.max_prompt_bytes = 10000;
  GradeItemInput input = SampleInput();
  input.conversation.back().content = std::string(6000, 'q');
  input.reply = std::string(5000, 'r');
  const size_t bytes = 6000 + 5000 + input.conversation.front().content.size();
  EXPECT_THAT(grader().Prepare(input.conversation, input.reply, "").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("the conversation and reply are ", bytes,
                                              " bytes, more than a whole rendered grader prompt "
                                              "may hold; the limit is 10000 (max_prompt_bytes)"))));
  EXPECT_TRUE(grader().CheckPromptBudget(10000).ok());
  EXPECT_FALSE(grader().CheckPromptBudget(10001).ok());
}

TEST_F(GraderTest, AGraderReplyOverItsLimitIsFinalNeverAVerdict) {
  config_.limits.max_grader_reply_bytes = 1000;
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  const std::string huge =
      absl::StrCat(R"({"criteria_met": true, "explanation": ")", std::string(1000, 'e'), R"("})");
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(huge)));
  EXPECT_THAT(result.get().status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the grader's reply is 1041 bytes; the limit is 1000 "
                                 "(max_grader_reply_bytes)")));
  EXPECT_EQ(llm_.requests().size(), 1u);  // not retried: a retry would be paid for again
  EXPECT_EQ(llm_.pending(), 0u);
}

TEST_F(GraderTest, EmptyReplyIsGraded) {
  Result result;
  GradeItemInput input = SampleInput();
  input.reply = "";
  grader().GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_EQ(llm_.pending(), 1u);
  EXPECT_THAT(llm_.requests()[0].body, HasSubstr("should I do?\\n\\nassistant: \\nITEM: [5]"));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kNotMet)));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_FALSE(verdict.verdict.criteria_met);
}

TEST_F(GraderTest, RejectsInvalidRequestsWithoutCallingUpstream) {
  config_.limits.max_message_bytes = 100;
  config_.limits.max_conversation_messages = 3;
  struct Case {
    std::string name;
    std::function<void(GradeItemInput&)> mutate;
    std::string message;
  };
  std::vector<Case> cases = {
      {"no conversation", [](GradeItemInput& in) { in.conversation.clear(); },
       "conversation is empty"},
      {"last turn assistant",
       [](GradeItemInput& in) {
         in.conversation.push_back({"assistant", "hi"});
       },
       "last conversation turn must be from the user, got role 'assistant'"},
      {"missing criterion", [](GradeItemInput& in) { in.item.criterion.clear(); },
       "rubric item has no criterion"},
      {"long message",
       [](GradeItemInput& in) { in.conversation[1].content = std::string(101, 'x'); },
       "conversation[1].content is 101 bytes; the limit is 100"},
      {"long reply", [](GradeItemInput& in) { in.reply = std::string(101, 'x'); },
       "reply is 101 bytes"},
      {"long criterion", [](GradeItemInput& in) { in.item.criterion = std::string(101, 'x'); },
       "criterion is 101 bytes"},
      {"too many messages",
       [](GradeItemInput& in) {
         in.conversation = {
             {"user", "a"}, {"assistant", "b"}, {"user", "c"}, {"assistant", "d"}, {"user", "e"}};
       },
       "conversation has 5 messages; the limit is 3"},
      {"nan points", [](GradeItemInput& in) { in.item.points = std::nan(""); },
       "points must be a finite number"},
  };
  for (const Case& c : cases) {
    GradeItemInput input = SampleInput();
    c.mutate(input);
    Result result;
    grader().GradeItem(input, absl::InfiniteFuture(), nullptr, result.Callback());
    ASSERT_EQ(result.calls, 1) << c.name;
    EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.name;
  }
  EXPECT_THAT(llm_.requests(), IsEmpty());
}

TEST_F(GraderTest, RetriesEveryRetryableFailureWithExactFullJitterDelays) {
  jitter_ = 0.5;  // delays: 0.5 * {500ms, 1s, 2s, 4s, 8s}
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  const std::vector<absl::StatusOr<ChatResult>> failures = {HttpFailure(503), ConnectionFailure(),
                                                            TimeoutFailure(), HttpFailure(408),
                                                            ChatReply("not json at all")};
  const absl::Duration delays[] = {absl::Milliseconds(250), absl::Milliseconds(500),
                                   absl::Seconds(1), absl::Seconds(2), absl::Seconds(4)};
  for (size_t i = 0; i < failures.size(); ++i) {
    ASSERT_EQ(llm_.pending(), 1u) << i;
    ASSERT_TRUE(llm_.CompleteNext(failures[i]));
    ASSERT_FALSE(result.done()) << i;
    EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(delays[i])) << i;
    // Not a millisecond early.
    EXPECT_EQ(scheduler_.AdvanceAndRun(delays[i] - absl::Milliseconds(1)), 0) << i;
    EXPECT_EQ(llm_.pending(), 0u) << i;
    EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Milliseconds(1)), 1) << i;
  }
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_TRUE(verdict.verdict.criteria_met);
  EXPECT_EQ(verdict.attempts, 6);
  // The malformed reply's tokens count too.
  EXPECT_EQ(verdict.usage.prompt_tokens, 200);
  EXPECT_EQ(llm_.requests().size(), 6u);
  for (const ChatRequest& r : llm_.requests()) EXPECT_EQ(r.body, llm_.requests()[0].body);
  EXPECT_EQ(metrics_.Retries("http_5xx"), 1);
  EXPECT_EQ(metrics_.Retries("connection"), 1);
  EXPECT_EQ(metrics_.Retries("timeout"), 1);
  EXPECT_EQ(metrics_.Retries("http_408"), 1);
  EXPECT_EQ(metrics_.Retries("malformed_reply"), 1);
}

TEST_F(GraderTest, HonoursRetryAfterAsAMinimum) {
  jitter_ = 0.5;
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429, absl::Milliseconds(3200))));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(3200)));
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429)) == false);  // nothing in flight during backoff
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Milliseconds(3200)), 1);
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(409)));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(500)));
}

TEST_F(GraderTest, NonObjectAndUnfencedRepliesAreRetriedFencedJsonIsAccepted) {
  jitter_ = 0.0;
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  for (const char* bad : {"42", "\"criteria_met\"", "[true]", "```\n{\"criteria_met\": true}\n```",
                          R"({"criteria_met": "true"})"}) {
    ASSERT_TRUE(llm_.CompleteNext(ChatReply(bad))) << bad;
    ASSERT_FALSE(result.done()) << bad;
    EXPECT_EQ(scheduler_.RunDue(), 1) << bad;  // zero jitter: due at once
  }
  ASSERT_TRUE(llm_.CompleteNext(ChatReply("```json\n{\"criteria_met\": false}\n```")));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_FALSE(verdict.verdict.criteria_met);
  EXPECT_EQ(verdict.verdict.explanation, "No explanation provided");
  EXPECT_EQ(verdict.attempts, 6);
}

TEST_F(GraderTest, NeverRetriesClientErrorsAndReportsTheBackendMessage) {
  for (int status : {400, 401, 403, 404, 422}) {
    Result result;
    grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
    ASSERT_TRUE(llm_.CompleteNext(HttpFailure(status, std::nullopt, "context too long")));
    ASSERT_EQ(result.calls, 1) << status;
    EXPECT_THAT(result.get(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr(absl::StrCat("upstream HTTP ", status, ": context too long"))))
        << status;
  }
  EXPECT_EQ(llm_.requests().size(), 5u);
  EXPECT_THAT(scheduler_.RequestedDelays(), IsEmpty());
}

TEST_F(GraderTest, RetryBudgetExhaustionCodes) {
  config_.retry.max_attempts = 3;
  jitter_ = 0.0;
  struct Case {
    std::function<absl::StatusOr<ChatResult>()> failure;
    absl::StatusCode code;
    std::string last;
  };
  std::vector<Case> cases = {
      {[] { return HttpFailure(503); }, absl::StatusCode::kUnavailable, "http_5xx"},
      {[] { return ConnectionFailure(); }, absl::StatusCode::kUnavailable, "connection"},
      {[] { return HttpFailure(429); }, absl::StatusCode::kResourceExhausted, "http_429"},
      {[] { return TimeoutFailure(); }, absl::StatusCode::kDeadlineExceeded, "timeout"},
      {[] { return ChatReply("{}"); }, absl::StatusCode::kUnavailable,
       "malformed_reply: grader reply has no 'criteria_met'"},
  };
  for (const Case& c : cases) {
    Result result;
    grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
    for (int attempt = 1; attempt <= 3; ++attempt) {
      ASSERT_TRUE(llm_.CompleteNext(c.failure())) << c.last << " " << attempt;
      scheduler_.RunDue();
    }
    ASSERT_EQ(result.calls, 1) << c.last;
    EXPECT_THAT(result.get(), StatusIs(c.code, HasSubstr("after 3 attempts"))) << c.last;
    EXPECT_THAT(result.get(), StatusIs(c.code, HasSubstr("last failure: " + c.last))) << c.last;
    EXPECT_EQ(llm_.pending(), 0u);
  }
}

TEST_F(GraderTest, GivesUpWhenTheNextAttemptCannotFinishBeforeTheDeadline) {
  jitter_ = 1.0;
  config_.retry.min_attempt_time = absl::Seconds(1);
  Result result;
  const absl::Time deadline = clock_.Now() + absl::Seconds(2);
  grader().GradeItem(SampleInput(), deadline, nullptr, result.Callback());
  EXPECT_EQ(llm_.requests()[0].timeout, absl::Seconds(2));  // the deadline shortens it
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(500)));
  // 0 + 500ms + 1s <= 2s: retry.
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(500)));
  scheduler_.AdvanceAndRun(absl::Milliseconds(500));
  ASSERT_EQ(llm_.requests().size(), 2u);
  EXPECT_EQ(llm_.requests()[1].timeout, absl::Milliseconds(1500));
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(500)));
  // 0.5s + 1s + 1s > 2s: give up now rather than after a pointless wait.
  ASSERT_EQ(result.calls, 1);
  EXPECT_THAT(result.get(),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("after 2 attempts")));
  EXPECT_THAT(scheduler_.PendingDelays(), IsEmpty());
}

TEST_F(GraderTest, DeadlineAlreadyPassedDuringBackoff) {
  jitter_ = 1.0;
  config_.retry.min_attempt_time = absl::ZeroDuration();
  Result result;
  grader().GradeItem(SampleInput(), clock_.Now() + absl::Seconds(1), nullptr, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(502)));
  clock_.Advance(absl::Seconds(5));  // the timer fires late (a stalled loop)
  scheduler_.RunDue();
  ASSERT_EQ(result.calls, 1);
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kDeadlineExceeded,
                                     HasSubstr("deadline exceeded before attempt 2")));
  EXPECT_EQ(llm_.requests().size(), 1u);
}

TEST_F(GraderTest, CancellingCancelsTheUpstreamCallInFlight) {
  auto token = std::make_shared<CancellationToken>();
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), token, result.Callback());
  ASSERT_EQ(llm_.pending(), 1u);
  token->Cancel();
  ASSERT_EQ(result.calls, 1);
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_EQ(llm_.cancelled().size(), 1u);
  EXPECT_EQ(llm_.pending(), 0u);
  EXPECT_EQ(result.calls, 1);  // the cancelled call's own completion is not delivered again
}

TEST_F(GraderTest, CancellingDuringBackoffDropsTheTimer) {
  auto token = std::make_shared<CancellationToken>();
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), token, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(503)));
  ASSERT_THAT(scheduler_.PendingDelays(), Not(IsEmpty()));
  token->Cancel();
  ASSERT_EQ(result.calls, 1);
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("1 attempt")));
  EXPECT_THAT(scheduler_.PendingDelays(), IsEmpty());
  scheduler_.AdvanceAndRun(absl::Minutes(1));
  EXPECT_EQ(llm_.requests().size(), 1u);
}

TEST_F(GraderTest, AlreadyCancelledTokenNeverCallsUpstream) {
  auto token = std::make_shared<CancellationToken>();
  token->Cancel();
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), token, result.Callback());
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("before it started")));
  EXPECT_THAT(llm_.requests(), IsEmpty());
}

TEST_F(GraderTest, ClientShutdownIsUnavailableNotAVerdict) {
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(absl::CancelledError("HTTP client shut down")));
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shut down")));
}

TEST_F(GraderTest, InlineResponderWorks) {
  int calls = 0;
  llm_.SetResponder([&calls](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return ++calls < 3 ? absl::StatusOr<ChatResult>(HttpFailure(500)) : ChatReply(kMet);
  });
  jitter_ = 0.0;
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  scheduler_.RunDue();
  scheduler_.RunDue();
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_EQ(verdict.attempts, 3);
}

TEST_F(GraderTest, AnAbsurdRetryAfterIsCappedNotObeyed) {
  jitter_ = 0.5;
  config_.retry.max_retry_after = absl::Minutes(5);
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429, absl::Seconds(99999999999))));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Minutes(5)));
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Minutes(5)), 1);
  EXPECT_EQ(llm_.requests().size(), 2u);
}

TEST_F(GraderTest, WaitsOutARetryAfterLongerThanTheBackoffCap) {
  jitter_ = 0.5;
  config_.retry.cap = absl::Seconds(30);
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  // A fixed-window limiter answers "come back when the window ends", 57.3 s away: retrying at
  // the 30 s cap would only be refused again.
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429, absl::Milliseconds(57300))));
  EXPECT_THAT(scheduler_.PendingDelays(), ElementsAre(absl::Milliseconds(57300)));
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Milliseconds(57299)), 0);
  EXPECT_EQ(llm_.requests().size(), 1u);
  EXPECT_EQ(scheduler_.AdvanceAndRun(absl::Milliseconds(1)), 1);
  ASSERT_EQ(llm_.requests().size(), 2u);
  ChatResult reply = ChatReply(kMet);
  reply.rate_limit.limit_requests = 6000;
  reply.rate_limit.remaining_requests = 5990;
  reply.rate_limit.reset_requests = absl::Milliseconds(59800);
  reply.rate_limit.remaining_tokens = 123;
  clock_.Advance(absl::Milliseconds(200));
  ASSERT_TRUE(llm_.CompleteNext(reply));
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_EQ(verdict.attempts, 2);
  EXPECT_EQ(verdict.rate_limited_attempts, 1);
  EXPECT_EQ(verdict.rate_limit.limit_requests, 6000);
  EXPECT_EQ(verdict.rate_limit.remaining_requests, 5990);
  EXPECT_EQ(verdict.rate_limit.reset_requests, absl::Milliseconds(59800));
  EXPECT_EQ(verdict.rate_limit.remaining_tokens, 123);
  EXPECT_EQ(verdict.rate_limit.limit_tokens, std::nullopt);
  EXPECT_EQ(verdict.rate_limit_age, absl::Milliseconds(200));
}

TEST_F(GraderTest, KeepsTheLatestRateLimitHeadersAndCountsNoRateLimitsWithoutA429) {
  jitter_ = 0.0;
  Result result;
  grader().GradeItem(SampleInput(), absl::InfiniteFuture(), nullptr, result.Callback());
  ChatResult malformed = ChatReply("not json");
  malformed.rate_limit.remaining_requests = 10;
  ASSERT_TRUE(llm_.CompleteNext(malformed));
  EXPECT_EQ(scheduler_.RunDue(), 1);
  clock_.Advance(absl::Milliseconds(300));
  ASSERT_TRUE(llm_.CompleteNext(ChatReply(kMet)));  // no headers: the earlier ones stay
  HB_ASSERT_OK_AND_ASSIGN(ItemVerdict verdict, result.get());
  EXPECT_EQ(verdict.rate_limited_attempts, 0);
  EXPECT_EQ(verdict.rate_limit.remaining_requests, 10);
  EXPECT_EQ(verdict.rate_limit_age, absl::Milliseconds(300));
}

TEST_F(GraderTest, A429WhoseRetryAfterPassesTheDeadlineFailsAtOnceWithTheRetryAfter) {
  jitter_ = 0.5;
  config_.retry.min_attempt_time = absl::Seconds(1);
  Result result;
  grader().GradeItem(SampleInput(), clock_.Now() + absl::Seconds(20), nullptr, result.Callback());
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(429, absl::Milliseconds(45250))));
  ASSERT_EQ(result.calls, 1);
  EXPECT_THAT(result.get(), StatusIs(absl::StatusCode::kResourceExhausted,
                                     HasSubstr("Retry-After of 45.25s would pass the deadline")));
  EXPECT_THAT(result.get().status().message(), Not(HasSubstr("retry_after")));
  EXPECT_EQ(RetryDelay(result.get().status()), absl::Milliseconds(45250));
  EXPECT_THAT(scheduler_.PendingDelays(), IsEmpty());
  EXPECT_EQ(llm_.requests().size(), 1u);
}

}  // namespace
}  // namespace hb
