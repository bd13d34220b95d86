#include "simulator/sim_core.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"

namespace hb::sim {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::StatusIs;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Pair;

// SPEC §5.1 steps 1-4 without Python's unicode strip subtleties (our content is ASCII):
// strip, drop one leading "```json" + whitespace, drop trailing whitespace + "```", strict JSON,
// criteria_met must be a boolean. Returns -1 when a correct parser rejects the reply.
int ReferenceParse(std::string s) {
  auto is_space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.erase(0, 1);
  while (!s.empty() && is_space(s.back())) s.pop_back();
  if (absl::StartsWith(s, "```json")) {
    s.erase(0, 7);
    while (!s.empty() && is_space(s.front())) s.erase(0, 1);
  }
  if (absl::EndsWith(s, "```")) {
    s.resize(s.size() - 3);
    while (!s.empty() && is_space(s.back())) s.pop_back();
  }
  rapidjson::Document doc;
  doc.Parse(s.c_str(), s.size());
  if (doc.HasParseError() || !doc.IsObject()) return -1;
  auto it = doc.FindMember("criteria_met");
  if (it == doc.MemberEnd() || !it->value.IsBool()) return -1;
  return it->value.GetBool() ? 1 : 0;
}

std::string ChatBody(absl::string_view user_content, absl::string_view extra = "") {
  return absl::StrCat(
      R"({"model":"gpt-4.1-2025-04-14","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":")",
      user_content, R"("}],"temperature":0.5,"max_tokens":2048)", extra, "}");
}

RateLimiter::Options Limits(int64_t rpm, int64_t tpm) {
  RateLimiter::Options options;
  options.rpm = rpm;
  options.tpm = tpm;
  return options;
}

std::string Header(const SimAction& action, absl::string_view name) {
  for (const auto& [key, value] : action.headers) {
    if (key == name) return value;
  }
  return "<absent>";
}

// ---------------------------------------------------------------------------------------------

TEST(ParseChatRequestTest, ParsesTheGraderRequest) {
  auto request = ParseChatRequest(
      R"({"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{}},{"type":"text","text":"b"}]},{"role":"assistant","content":null}],"temperature":0.5,"max_tokens":2048,"prompt_cache_key":"ex-1"})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->model, "m");
  ASSERT_EQ(request->messages.size(), 3u);
  EXPECT_EQ(request->messages[1].content, "ab");
  EXPECT_EQ(request->messages[2].content, "");
  EXPECT_EQ(request->temperature, 0.5);
  EXPECT_EQ(request->max_tokens, 2048);
  EXPECT_EQ(request->prompt_cache_key, "ex-1");
  EXPECT_EQ(PromptText(*request), "sysab");
  EXPECT_EQ(LastUserMessage(*request), "ab");
}

TEST(ParseChatRequestTest, RejectsInvalidRequests) {
  EXPECT_THAT(ParseChatRequest("{bad"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseChatRequest(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseChatRequest("[]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a JSON object")));
  EXPECT_THAT(
      ParseChatRequest(R"({"model":"m"})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'messages' is a required property")));
  EXPECT_THAT(ParseChatRequest(R"({"messages":[]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-empty array")));
  EXPECT_THAT(ParseChatRequest(R"({"messages":[{"content":"x"}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages[0].role")));
  EXPECT_THAT(ParseChatRequest(R"({"messages":[{"role":"user","content":5}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages[0].content")));
  EXPECT_THAT(ParseChatRequest(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'max_tokens'")));
  EXPECT_THAT(
      ParseChatRequest(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'temperature'")));
}

TEST(EstimateTokensTest, IsCeilOfBytesOverFour) {
  EXPECT_EQ(EstimateTokens(""), 0);
  EXPECT_EQ(EstimateTokens("a"), 1);
  EXPECT_EQ(EstimateTokens("abcd"), 1);
  EXPECT_EQ(EstimateTokens("abcde"), 2);
  EXPECT_EQ(EstimateTokens(std::string(4097, 'x')), 1025);
}

// ---------------------------------------------------------------------------------------------

TEST(PromptCacheTest, ReportsSharedPrefixInWholeBlocksFromTheSecondRequest) {
  FakeClock clock;
  PromptCache cache({}, &clock);
  const std::string prompt(5000, 'p');  // 9 whole 512-byte blocks
  EXPECT_EQ(cache.LookupAndStore("k", prompt), 0);
  EXPECT_EQ(cache.LookupAndStore("k", prompt), 9 * 128);
  // Differs at byte 4600 (inside block 8): blocks 0..7 shared = 1,024 tokens.
  std::string changed = prompt;
  changed[4600] = 'q';
  EXPECT_EQ(cache.LookupAndStore("k", changed), 1024);
  // Differs at byte 4000 (block 7): only 7 blocks = 896 tokens shared, below the minimum.
  std::string early = changed;
  early[4000] = 'r';
  EXPECT_EQ(cache.LookupAndStore("k", early), 0);
}

TEST(PromptCacheTest, ShortPromptsAndOtherKeysMiss) {
  FakeClock clock;
  PromptCache cache({}, &clock);
  const std::string short_prompt(4095, 's');  // 7 whole blocks < 1,024 tokens
  EXPECT_EQ(cache.LookupAndStore("k", short_prompt), 0);
  EXPECT_EQ(cache.LookupAndStore("k", short_prompt), 0);
  const std::string prompt(4096, 'p');
  EXPECT_EQ(cache.LookupAndStore("a", prompt), 0);
  EXPECT_EQ(cache.LookupAndStore("b", prompt), 0);
  EXPECT_EQ(cache.LookupAndStore("a", prompt), 1024);
}

TEST(PromptCacheTest, WithoutKeyMatchesOnTheFirst1024Tokens) {
  FakeClock clock;
  PromptCache cache({}, &clock);
  std::string a(6000, 'x');
  std::string b = a;
  b[5500] = 'y';  // differs in block 10
  EXPECT_EQ(cache.LookupAndStore("", a), 0);
  EXPECT_EQ(cache.LookupAndStore("", b), 10 * 128);
  std::string c = a;
  c[100] = 'z';  // different first 1,024 tokens: another entry
  EXPECT_EQ(cache.LookupAndStore("", c), 0);
}

TEST(PromptCacheTest, EntriesExpireAfterTheTtl) {
  FakeClock clock;
  PromptCache::Options options;
  options.ttl = absl::Minutes(5);
  PromptCache cache(options, &clock);
  const std::string prompt(4096, 'p');
  EXPECT_EQ(cache.LookupAndStore("k", prompt), 0);
  clock.Advance(absl::Minutes(5));
  EXPECT_EQ(cache.LookupAndStore("k", prompt), 1024);  // exactly the ttl: still warm
  clock.Advance(absl::Minutes(5) + absl::Seconds(1));
  EXPECT_EQ(cache.LookupAndStore("k", prompt), 0);
}

// ---------------------------------------------------------------------------------------------

TEST(RateLimiterTest, FixedWindowOfRequests) {
  FakeClock clock;
  RateLimiter limiter(Limits(2, 0), &clock);
  RateLimitDecision d = limiter.Peek();
  EXPECT_EQ(d.remaining_requests, 2);
  EXPECT_EQ(FormatResetDuration(d.reset), "0s");

  d = limiter.Acquire(100);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.limit_requests, 2);
  EXPECT_EQ(d.remaining_requests, 1);
  EXPECT_EQ(FormatResetDuration(d.reset), "1m");

  clock.Advance(absl::Milliseconds(1200));
  d = limiter.Acquire(100);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.remaining_requests, 0);
  EXPECT_EQ(FormatResetDuration(d.reset), "58.8s");

  d = limiter.Acquire(100);
  EXPECT_FALSE(d.admitted);
  EXPECT_TRUE(d.requests_exceeded);
  EXPECT_FALSE(d.tokens_exceeded);
  EXPECT_EQ(d.remaining_requests, 0);
  EXPECT_EQ(d.retry_after, absl::Milliseconds(58800));

  clock.Advance(absl::Milliseconds(58799));
  EXPECT_FALSE(limiter.Acquire(100).admitted);
  clock.Advance(absl::Milliseconds(1));
  d = limiter.Acquire(100);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.remaining_requests, 1);
  EXPECT_EQ(FormatResetDuration(d.reset), "1m");
}

TEST(RateLimiterTest, TokensPerMinute) {
  FakeClock clock;
  RateLimiter limiter(Limits(0, 1000), &clock);
  RateLimitDecision d = limiter.Acquire(600);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.remaining_tokens, 400);
  d = limiter.Acquire(401);
  EXPECT_FALSE(d.admitted);
  EXPECT_TRUE(d.tokens_exceeded);
  EXPECT_EQ(d.remaining_tokens, 400);  // refused requests consume nothing
  d = limiter.Acquire(400);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.remaining_tokens, 0);
  // Larger than the whole budget: refused even in a fresh window.
  clock.Advance(absl::Minutes(1));
  d = limiter.Acquire(1001);
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.retry_after, absl::Minutes(1));
}

TEST(FormatResetDurationTest, GoLikeMilliseconds) {
  EXPECT_EQ(FormatResetDuration(absl::ZeroDuration()), "0s");
  EXPECT_EQ(FormatResetDuration(absl::Milliseconds(250)), "250ms");
  EXPECT_EQ(FormatResetDuration(absl::Microseconds(1200001)), "1.201s");
  EXPECT_EQ(FormatResetDuration(absl::Seconds(60)), "1m");
}

// ---------------------------------------------------------------------------------------------

constexpr FaultKind kAllFaults[] = {FaultKind::kReset,     FaultKind::kHang,  FaultKind::k429,
                                    FaultKind::k500,       FaultKind::k503,   FaultKind::kMalformed,
                                    FaultKind::kNonObject, FaultKind::kFenced};

FaultRates OnlyRate(FaultKind kind, double rate) {
  FaultRates r;
  switch (kind) {
    case FaultKind::kReset:
      r.reset = rate;
      break;
    case FaultKind::kHang:
      r.hang = rate;
      break;
    case FaultKind::k429:
      r.status_429 = rate;
      break;
    case FaultKind::k500:
      r.status_500 = rate;
      break;
    case FaultKind::k503:
      r.status_503 = rate;
      break;
    case FaultKind::kMalformed:
      r.malformed = rate;
      break;
    case FaultKind::kNonObject:
      r.nonobject = rate;
      break;
    case FaultKind::kFenced:
      r.fenced = rate;
      break;
    case FaultKind::kNone:
      break;
  }
  return r;
}

TEST(ChooseFaultTest, RateOneAlwaysFiresRateZeroNever) {
  for (FaultKind kind : kAllFaults) {
    SCOPED_TRACE(FaultKindName(kind));
    for (uint64_t seq = 0; seq < 500; ++seq) {
      EXPECT_EQ(ChooseFault(OnlyRate(kind, 1.0), 7, seq), kind);
      EXPECT_EQ(ChooseFault(OnlyRate(kind, 0.0), 7, seq), FaultKind::kNone);
    }
  }
}

TEST(ChooseFaultTest, FractionalRateIsSeededAndApproximatelyRight) {
  for (FaultKind kind : kAllFaults) {
    SCOPED_TRACE(FaultKindName(kind));
    int fired = 0;
    for (uint64_t seq = 0; seq < 10000; ++seq) {
      const FaultKind chosen = ChooseFault(OnlyRate(kind, 0.3), 42, seq);
      EXPECT_EQ(chosen, ChooseFault(OnlyRate(kind, 0.3), 42, seq));
      fired += chosen == kind ? 1 : 0;
    }
    EXPECT_GT(fired, 2800);
    EXPECT_LT(fired, 3200);
  }
  // Another seed gives another sequence.
  int differ = 0;
  for (uint64_t seq = 0; seq < 100; ++seq) {
    differ += ChooseFault(OnlyRate(FaultKind::k500, 0.5), 1, seq) !=
              ChooseFault(OnlyRate(FaultKind::k500, 0.5), 2, seq);
  }
  EXPECT_GT(differ, 20);
}

TEST(FaultReplyContentTest, NoVariantCarriesAWrongVerdict) {
  for (bool met : {true, false}) {
    for (uint64_t seq = 0; seq < 6; ++seq) {
      EXPECT_EQ(ReferenceParse(FaultReplyContent(FaultKind::kNone, met, seq)), met ? 1 : 0);
      const std::string fenced = FaultReplyContent(FaultKind::kFenced, met, seq);
      EXPECT_THAT(fenced, ::testing::StartsWith("```json\n"));
      EXPECT_THAT(fenced, ::testing::EndsWith("\n```"));
      EXPECT_EQ(ReferenceParse(fenced), met ? 1 : 0) << fenced;
      const std::string malformed = FaultReplyContent(FaultKind::kMalformed, met, seq);
      EXPECT_EQ(ReferenceParse(malformed), -1) << malformed;
      rapidjson::Document doc;
      doc.Parse(malformed.c_str());
      EXPECT_TRUE(doc.HasParseError()) << malformed;
      const std::string nonobject = FaultReplyContent(FaultKind::kNonObject, met, seq);
      EXPECT_EQ(ReferenceParse(nonobject), -1) << nonobject;
      doc.Parse(nonobject.c_str());
      EXPECT_FALSE(doc.HasParseError()) << nonobject;
      EXPECT_FALSE(doc.IsObject()) << nonobject;
    }
  }
  EXPECT_EQ(FaultReplyContent(FaultKind::kNonObject, true, 0), "42");
  EXPECT_EQ(FaultReplyContent(FaultKind::kNonObject, true, 1), "\"criteria_met\"");
}

// ---------------------------------------------------------------------------------------------

TEST(SimulatorTest, AnswersWithThePredictedVerdictAndOpenAiShape) {
  FakeClock clock;
  Simulator sim({}, &clock);
  for (const std::string content : {"abc", "", "grade this [[sim:met=true]]"}) {
    const std::string body = ChatBody(content);
    SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", body});
    ASSERT_EQ(action.status, 200) << action.body;
    EXPECT_EQ(action.kind, SimAction::Kind::kReply);
    EXPECT_THAT(action.headers, Contains(Pair("Content-Type", "application/json")));
    rapidjson::Document doc;
    doc.Parse(action.body.c_str());
    ASSERT_FALSE(doc.HasParseError()) << action.body;
    EXPECT_STREQ(doc["object"].GetString(), "chat.completion");
    EXPECT_STREQ(doc["model"].GetString(), "gpt-4.1-2025-04-14");
    EXPECT_EQ(doc["created"].GetInt64(), absl::ToUnixSeconds(clock.Now()));
    const auto& choice = doc["choices"][0];
    EXPECT_STREQ(choice["finish_reason"].GetString(), "stop");
    EXPECT_STREQ(choice["message"]["role"].GetString(), "assistant");
    const std::string reply = choice["message"]["content"].GetString();
    EXPECT_EQ(ReferenceParse(reply), SimulatedVerdict(content) ? 1 : 0);
    const auto& usage = doc["usage"];
    const int64_t prompt_tokens =
        EstimateTokens(absl::StrCat("You are a helpful assistant.", content));
    EXPECT_EQ(usage["prompt_tokens"].GetInt64(), prompt_tokens);
    EXPECT_EQ(usage["completion_tokens"].GetInt64(), EstimateTokens(reply));
    EXPECT_EQ(usage["total_tokens"].GetInt64(), prompt_tokens + EstimateTokens(reply));
    EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"].GetInt64(), 0);
  }
  EXPECT_TRUE(SimulatedVerdict("grade this [[sim:met=true]]"));
  EXPECT_EQ(sim.Handle({"POST", "/chat/completions", "", ChatBody("x")}).status, 200);
}

// PR #108's grader body on the Responses API.
std::string ResponsesBody(absl::string_view user_content, absl::string_view extra = "") {
  return absl::StrCat(R"({"model":"gpt-5.4-2026-03-05","input":[{"role":"user","content":")",
                      user_content, R"("}],"reasoning":{"effort":"low"})", extra, "}");
}

TEST(ParseResponsesRequestTest, ParsesTheGraderRequestAndRefusesWhatOpenAiRefuses) {
  auto request = ParseResponsesRequest(ResponsesBody("q"));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->api, GraderApi::kResponses);
  EXPECT_EQ(request->model, "gpt-5.4-2026-03-05");
  ASSERT_EQ(request->messages.size(), 1u);
  EXPECT_EQ(request->messages[0].content, "q");
  EXPECT_EQ(request->reasoning_effort, "low");
  EXPECT_FALSE(request->temperature.has_value());
  auto text_input = ParseResponsesRequest(R"({"model":"m","input":"plain"})");
  ASSERT_TRUE(text_input.ok());
  EXPECT_EQ(LastUserMessage(*text_input), "plain");

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"model":"m"})", "'input' is a required property"},
      {R"({"model":"m","input":[]})", "'input' must be a non-empty array"},
      {R"({"model":"m","input":[{"content":"x"}]})", "input[0].role must be a string"},
      {R"({"model":"m","messages":[],"input":"x"})", "Unknown parameter: 'messages'."},
      {ResponsesBody("q", R"(,"temperature":0.5)"),
       "Unsupported parameter: 'temperature' is not supported with this model."},
      {R"({"model":"m","input":"x","reasoning":{"effort":"extreme"}})", "Invalid value: 'extreme'"},
      {R"({"model":"m","input":"x","reasoning":"low"})", "'reasoning' must be an object"},
      {R"({"model":"m","input":"x","max_output_tokens":0})",
       "'max_output_tokens' must be a positive integer"},
  };
  for (const auto& [body, message] : bad) {
    EXPECT_THAT(ParseResponsesRequest(body),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << body;
  }
  EXPECT_EQ(SimulatedReasoningTokens("low"), 192);
  EXPECT_EQ(SimulatedReasoningTokens(""), 0);
}

// The same verdict as chat for the same grader prompt; reasoning tokens billed as output; the
// text in two output_text parts that join to the reply.
TEST(SimulatorTest, ResponsesApiAnswersTheSameVerdictWithReasoningUsage) {
  FakeClock clock;
  Simulator sim({}, &clock);
  for (const std::string content : {"abc", "grade this [[sim:met=true]]", "caf\xc3\xa9"}) {
    SimAction action = sim.Handle({"POST", "/v1/responses", "", ResponsesBody(content)});
    ASSERT_EQ(action.status, 200) << action.body;
    rapidjson::Document doc;
    doc.Parse(action.body.c_str());
    ASSERT_FALSE(doc.HasParseError()) << action.body;
    EXPECT_STREQ(doc["object"].GetString(), "response");
    EXPECT_STREQ(doc["status"].GetString(), "completed");
    const auto& output = doc["output"];
    ASSERT_EQ(output.Size(), 2u);
    EXPECT_STREQ(output[0]["type"].GetString(), "reasoning");
    const auto& parts = output[1]["content"];
    ASSERT_EQ(parts.Size(), 2u);
    const std::string reply =
        absl::StrCat(parts[0]["text"].GetString(), parts[1]["text"].GetString());
    EXPECT_EQ(ReferenceParse(reply), SimulatedVerdict(content) ? 1 : 0);
    const auto& usage = doc["usage"];
    EXPECT_EQ(usage["input_tokens"].GetInt64(), EstimateTokens(content));
    EXPECT_EQ(usage["output_tokens_details"]["reasoning_tokens"].GetInt64(), 192);
    EXPECT_EQ(usage["output_tokens"].GetInt64(), EstimateTokens(reply) + 192);
    EXPECT_EQ(usage["input_tokens_details"]["cached_tokens"].GetInt64(), 0);
  }
  // A chat body on the Responses route (and the reverse) is a 400.
  EXPECT_EQ(sim.Handle({"POST", "/v1/responses", "", ChatBody("x")}).status, 400);
  EXPECT_EQ(sim.Handle({"POST", "/v1/chat/completions", "", ResponsesBody("x")}).status, 400);
  EXPECT_EQ(sim.Handle({"POST", "/responses", "", ResponsesBody("x")}).status, 200);
  EXPECT_EQ(sim.Handle({"GET", "/v1/responses", "", ""}).status, 405);
}

TEST(SimulatorTest, ReportsCachedTokensForARepeatedLongPrompt) {
  FakeClock clock;
  Simulator sim({}, &clock);
  const std::string body = ChatBody(std::string(6000, 'c'), R"(,"prompt_cache_key":"ex-7")");
  auto cached = [&] {
    rapidjson::Document doc;
    doc.Parse(sim.Handle({"POST", "/v1/chat/completions", "", body}).body.c_str());
    return doc["usage"]["prompt_tokens_details"]["cached_tokens"].GetInt64();
  };
  EXPECT_EQ(cached(), 0);
  // 28 + 6000 bytes = 11 whole blocks of 128 tokens.
  EXPECT_EQ(cached(), 11 * 128);
}

// A 1 MB body of '[' is a clear 400, not a stack overflow.
TEST(SimulatorTest, AMegabyteOfOpenBracketsIsAClear400) {
  FakeClock clock;
  Simulator sim(SimulatorOptions{}, &clock);
  SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", std::string(1 << 20, '[')});
  EXPECT_EQ(action.status, 400);
  EXPECT_THAT(action.body, HasSubstr("request body is not valid JSON: nesting deeper than 64 "
                                     "levels at offset 64"));
}

// --require-header / --require-body-key: a gateway's header and a judge's guided-decoding field.
TEST(SimulatorTest, RequiredHeadersAndBodyKeys) {
  FakeClock clock;
  SimulatorOptions options;
  options.required_headers = {{"api-key", "K1"}};
  options.required_body_keys = {"guided_json"};
  Simulator sim(options, &clock);
  const std::string guided = ChatBody("x", R"(,"guided_json":{"type":"object"})");
  SimHttpRequest request{"POST", "/v1/chat/completions", "", guided};
  SimAction action = sim.Handle(request);
  EXPECT_EQ(action.status, 401);
  EXPECT_THAT(action.body, HasSubstr("Missing or wrong header api-key: the simulator was started "
                                     "with --require-header api-key=..."));
  request.headers = {{"API-Key", "K2"}};
  EXPECT_EQ(sim.Handle(request).status, 401);
  request.headers = {{"X-Other", "K1"}, {"API-Key", "K1"}};  // name case-insensitive
  EXPECT_EQ(sim.Handle(request).status, 200);
  const std::string plain = ChatBody("x");
  request.body = plain;
  action = sim.Handle(request);
  EXPECT_EQ(action.status, 400);
  EXPECT_THAT(action.body, HasSubstr("Missing required parameter: 'guided_json' (the simulator "
                                     "was started with --require-body-key guided_json)."));
  // The batch routes check the header too.
  EXPECT_EQ(sim.Handle({"GET", "/v1/batches/batch_x", "", ""}).status, 401);
}

// Every answer says it comes from the simulator (x-hb-llm-sim: 1), and GET /v1/models answers
// a client's start-up probe, authenticated like the grader, without counting as a request.
TEST(SimulatorTest, SaysWhatItIsAndAnswersTheModelList) {
  FakeClock clock;
  SimulatorOptions options;
  options.api_key = "sk-test";
  Simulator sim(options, &clock);
  // SimHttpRequest holds views: the body must outlive the loop.
  const std::string body = ChatBody("x");
  for (const SimHttpRequest& request :
       {SimHttpRequest{"POST", "/v1/chat/completions", "Bearer sk-test", body},
        SimHttpRequest{"POST", "/v1/chat/completions", "", body},
        SimHttpRequest{"GET", "/nowhere", "", ""},
        SimHttpRequest{"GET", "/v1/models", "Bearer sk-test", ""}}) {
    EXPECT_THAT(sim.Handle(request).headers, Contains(Pair("x-hb-llm-sim", "1"))) << request.path;
  }
  SimAction models = sim.Handle({"GET", "/v1/models", "Bearer sk-test", ""});
  EXPECT_EQ(models.status, 200);
  EXPECT_THAT(models.body, HasSubstr(R"("object":"list","data":[{"id":"hb-llm-sim")"));
  EXPECT_EQ(sim.Handle({"GET", "/models", "Bearer wrong", ""}).status, 401);
  EXPECT_THAT(sim.RenderMetrics(), HasSubstr("hb_sim_requests_total 2\n"));
}

TEST(SimulatorTest, ValidatesAuthAndBody) {
  FakeClock clock;
  SimulatorOptions options;
  options.api_key = "sk-test";
  Simulator sim(options, &clock);
  SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", ChatBody("x")});
  EXPECT_EQ(action.status, 401);
  EXPECT_THAT(action.body, HasSubstr(R"("code":"invalid_api_key")"));
  action = sim.Handle({"POST", "/v1/chat/completions", "Bearer wrong", ChatBody("x")});
  EXPECT_EQ(action.status, 401);
  action = sim.Handle({"POST", "/v1/chat/completions", "Bearer sk-test", "{bad"});
  EXPECT_EQ(action.status, 400);
  rapidjson::Document doc;
  doc.Parse(action.body.c_str());
  ASSERT_TRUE(doc.IsObject()) << action.body;
  EXPECT_STREQ(doc["error"]["type"].GetString(), "invalid_request_error");
  EXPECT_THAT(doc["error"]["message"].GetString(), HasSubstr("not valid JSON"));
  action = sim.Handle({"POST", "/v1/chat/completions", "Bearer sk-test", R"({"model":"m"})"});
  EXPECT_EQ(action.status, 400);
  EXPECT_THAT(action.body, HasSubstr("'messages' is a required property"));
  EXPECT_EQ(sim.Handle({"POST", "/v1/chat/completions", "Bearer sk-test", ChatBody("x")}).status,
            200);
  EXPECT_EQ(sim.Handle({"GET", "/v1/chat/completions", "", ""}).status, 405);
  EXPECT_EQ(sim.Handle({"GET", "/nope", "", ""}).status, 404);
  EXPECT_EQ(sim.Handle({"GET", "/healthz", "", ""}).body, "ok\n");

  const std::string metrics = sim.RenderMetrics();
  EXPECT_THAT(metrics, HasSubstr("hb_sim_requests_total 5\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_responses_total{status=\"401\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_responses_total{status=\"400\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_responses_total{status=\"200\"} 1\n"));
}

TEST(SimulatorTest, RateLimitHeadersAnd429) {
  FakeClock clock;
  SimulatorOptions options;
  options.rate_limits = Limits(2, 10000);
  Simulator sim(options, &clock);
  const std::string body = ChatBody("abcd");  // 28 + 4 bytes = 8 tokens, + max_tokens 2048
  SimAction first = sim.Handle({"POST", "/v1/chat/completions", "", body});
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(Header(first, "x-ratelimit-limit-requests"), "2");
  EXPECT_EQ(Header(first, "x-ratelimit-remaining-requests"), "1");
  EXPECT_EQ(Header(first, "x-ratelimit-reset-requests"), "1m");
  EXPECT_EQ(Header(first, "x-ratelimit-limit-tokens"), "10000");
  EXPECT_EQ(Header(first, "x-ratelimit-remaining-tokens"), "7944");
  EXPECT_EQ(Header(first, "x-ratelimit-reset-tokens"), "1m");

  clock.Advance(absl::Milliseconds(1200));
  SimAction second = sim.Handle({"POST", "/v1/chat/completions", "", body});
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(Header(second, "x-ratelimit-remaining-requests"), "0");
  EXPECT_EQ(Header(second, "x-ratelimit-remaining-tokens"), "5888");
  EXPECT_EQ(Header(second, "x-ratelimit-reset-requests"), "58.8s");

  SimAction third = sim.Handle({"POST", "/v1/chat/completions", "", body});
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(third.delay, absl::ZeroDuration());
  EXPECT_EQ(Header(third, "x-ratelimit-remaining-requests"), "0");
  EXPECT_EQ(Header(third, "retry-after"), "59");
  EXPECT_EQ(Header(third, "retry-after-ms"), "58800");
  EXPECT_THAT(third.body, HasSubstr(R"("code":"rate_limit_exceeded")"));
  EXPECT_THAT(third.log_line, HasSubstr(R"("status":429)"));

  clock.Advance(absl::Milliseconds(58800));
  SimAction fourth = sim.Handle({"POST", "/v1/chat/completions", "", body});
  EXPECT_EQ(fourth.status, 200);
  EXPECT_EQ(Header(fourth, "x-ratelimit-remaining-requests"), "1");
  EXPECT_THAT(sim.RenderMetrics(), HasSubstr("hb_sim_rate_limited_total 1\n"));
}

TEST(SimulatorTest, NoRateLimitHeadersWhenUnlimited) {
  FakeClock clock;
  Simulator sim({}, &clock);
  SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", ChatBody("x")});
  EXPECT_EQ(Header(action, "x-ratelimit-limit-requests"), "<absent>");
}

TEST(SimulatorTest, EachFaultKindBecomesTheRightAction) {
  FakeClock clock;
  for (FaultKind kind : kAllFaults) {
    SCOPED_TRACE(FaultKindName(kind));
    SimulatorOptions options;
    options.faults = OnlyRate(kind, 1.0);
    options.latency_ms = 100;
    options.retry_after_ms = 1500;
    Simulator sim(options, &clock);
    const std::string content = "judge me";
    SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", ChatBody(content)});
    EXPECT_THAT(action.log_line,
                HasSubstr(absl::StrCat("\"fault\":\"", FaultKindName(kind), "\"")));
    EXPECT_THAT(sim.RenderMetrics(), HasSubstr(absl::StrCat("hb_sim_faults_total{kind=\"",
                                                            FaultKindName(kind), "\"} 1\n")));
    switch (kind) {
      case FaultKind::kReset:
        EXPECT_EQ(action.kind, SimAction::Kind::kReset);
        EXPECT_EQ(action.delay, absl::Milliseconds(100));
        break;
      case FaultKind::kHang:
        EXPECT_EQ(action.kind, SimAction::Kind::kHang);
        break;
      case FaultKind::k429:
        EXPECT_EQ(action.status, 429);
        EXPECT_EQ(Header(action, "retry-after"), "2");
        EXPECT_EQ(Header(action, "retry-after-ms"), "1500");
        break;
      case FaultKind::k500:
      case FaultKind::k503:
        EXPECT_EQ(action.status, kind == FaultKind::k500 ? 500 : 503);
        EXPECT_THAT(action.body, HasSubstr(R"("type":"server_error")"));
        EXPECT_EQ(action.delay, absl::Milliseconds(100));
        break;
      default: {
        EXPECT_EQ(action.status, 200);
        rapidjson::Document doc;
        doc.Parse(action.body.c_str());
        ASSERT_FALSE(doc.HasParseError());
        const int parsed = ReferenceParse(doc["choices"][0]["message"]["content"].GetString());
        EXPECT_EQ(parsed, kind == FaultKind::kFenced ? (SimulatedVerdict(content) ? 1 : 0) : -1);
      }
    }
  }
}

TEST(SimulatorTest, LatencyJitterIsSeededAndBounded) {
  FakeClock clock;
  SimulatorOptions options;
  options.latency_ms = 1000;
  options.latency_jitter = 0.2;
  options.seed = 9;
  Simulator a(options, &clock);
  Simulator b(options, &clock);
  absl::Duration min = absl::InfiniteDuration(), max = absl::ZeroDuration();
  for (int i = 0; i < 200; ++i) {
    const absl::Duration da = a.Handle({"POST", "/v1/chat/completions", "", ChatBody("x")}).delay;
    const absl::Duration db = b.Handle({"POST", "/v1/chat/completions", "", ChatBody("x")}).delay;
    EXPECT_EQ(da, db);
    min = std::min(min, da);
    max = std::max(max, da);
  }
  EXPECT_GE(min, absl::Milliseconds(800));
  EXPECT_LT(max, absl::Milliseconds(1200));
  EXPECT_LT(min, absl::Milliseconds(850));  // the whole range is used
  EXPECT_GT(max, absl::Milliseconds(1150));
}

TEST(SimulatorTest, LogLineIsOneJsonObject) {
  FakeClock clock;
  Simulator sim({}, &clock);
  SimAction action = sim.Handle({"POST", "/v1/chat/completions", "", ChatBody("abc")});
  rapidjson::Document doc;
  doc.Parse(action.log_line.c_str());
  ASSERT_TRUE(doc.IsObject()) << action.log_line;
  EXPECT_EQ(doc["status"].GetInt(), 200);
  EXPECT_STREQ(doc["fault"].GetString(), "none");
  EXPECT_EQ(doc["prompt_tokens"].GetInt64(), EstimateTokens("You are a helpful assistant.abc"));
  EXPECT_FALSE(doc["verdict"].GetBool());  // sha256("abc") starts with 0xba
  EXPECT_TRUE(doc["time"].IsString());
  EXPECT_EQ(doc["latency_ms"].GetDouble(), 0);
}

}  // namespace
}  // namespace hb::sim
