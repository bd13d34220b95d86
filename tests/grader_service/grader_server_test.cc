// The real GraderServer on 127.0.0.1:0, through a real channel, against a real hb-llm-sim
// child process (or a loopback capture server): the 352 rubric rows of the real main sample
// (synthetic replies) graded exactly as the simulator predicts, with and without injected
// faults; retry budgets that run out return errors, never verdicts; the upstream body is
// byte-identical to BuildChatCompletionBody; the API key never leaks; health and shutdown;
// the gRPC conventions (health names, no shared port, reflection only on request, malformed
// bytes as INVALID_ARGUMENT).
#include "grader_service/grader_server.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/rpc/grpc_status.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"
#include "prometheus/text_serializer.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/captured_log.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/raw_grpc_call.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::RawUnaryCall;

namespace v1 = ::healthbench::grader::v1;
using ::hb::testing::LlmSim;
using ::hb::testing::LoopbackHttpServer;
using ::hb::testing::LoopbackRequest;
using ::hb::testing::LoopbackResponse;
using ::hb::testing::StartLlmSim;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// One rubric row of the real sample with a synthetic reply, and the simulator's verdict.
struct Row {
  v1::GradeItemRequest request;
  std::string expected_body;
  bool predicted = false;
};

// The rows of the real main sample, computed once.
class Sample {
 public:
  static const Sample& Get() {
    static const Sample* sample = new Sample();
    return *sample;
  }
  std::vector<Row> rows;
  Dataset dataset;

 private:
  Sample() {
    absl::StatusOr<Dataset> loaded =
        LoadDataset(hb::testing::SharedDataFile(hb::testing::kMainHead30), {});
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    dataset = *std::move(loaded);
    absl::StatusOr<GraderTemplate> tmpl =
        GraderTemplate::Load(hb::testing::ReferenceTemplatePath());
    EXPECT_TRUE(tmpl.ok()) << tmpl.status();
    for (const Example& example : dataset.examples) {
      const std::string reply = absl::StrCat("Synthetic reply to ", example.prompt_id,
                                             ": see a clinician if symptoms persist.");
      const std::string conversation =
          RenderConversation(GradedConversation(example.prompt, std::nullopt, reply));
      for (size_t i = 0; i < example.rubrics.size(); ++i) {
        const RubricItem& item = example.rubrics[i];
        Row row;
        for (const Message& m : example.prompt) {
          v1::Message* out = row.request.add_conversation();
          out->set_role(m.role);
          out->set_content(m.content);
        }
        row.request.set_reply(reply);
        row.request.mutable_rubric_item()->set_criterion(item.criterion);
        row.request.mutable_rubric_item()->set_points(item.points);
        row.request.mutable_rubric_item()->set_points_text(item.points_text);
        for (const std::string& tag : item.tags) row.request.mutable_rubric_item()->add_tags(tag);
        row.request.set_request_id(absl::StrCat(example.prompt_id, "/", i));
        row.request.set_prompt_cache_key(example.prompt_id);
        const std::string prompt = tmpl->Fill(conversation, RenderRubricItem(item));
        row.expected_body = BuildChatCompletionBody(GraderSettings{}, prompt, example.prompt_id);
        row.predicted = SimulatedVerdict(prompt);
        rows.push_back(std::move(row));
      }
    }
  }
};

GraderServerOptions Options(const std::string& base_url) {
  GraderServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.llm.base_url = base_url;
  options.llm.attempt_timeout = absl::Seconds(10);
  options.llm.max_upstream_in_flight = 512;
  options.retry.max_attempts = 12;
  options.retry.base = absl::Milliseconds(1);
  options.retry.cap = absl::Milliseconds(20);
  options.retry.min_attempt_time = absl::Milliseconds(10);
  options.template_path = hb::testing::ReferenceTemplatePath();
  return options;
}

std::unique_ptr<GraderServer> StartServer(const GraderServerOptions& options) {
  absl::StatusOr<std::unique_ptr<GraderServer>> server = GraderServer::Start(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::shared_ptr<grpc::Channel> ChannelTo(const GraderServer& server) {
  return grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.port()),
                             grpc::InsecureChannelCredentials());
}

LlmSim Sim(std::vector<std::string> flags) {
  flags.push_back("--threads=1");
  flags.push_back("--retry-after-ms=5");
  absl::StatusOr<LlmSim> sim = StartLlmSim(flags);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return sim.ok() ? *std::move(sim) : LlmSim{};
}

// Sends every request at once (async) and returns the outcomes in order.
std::vector<absl::StatusOr<v1::GradeItemResponse>> GradeAll(grpc::Channel& channel,
                                                            const std::vector<Row>& rows) {
  auto stub = v1::Grader::NewStub(std::shared_ptr<grpc::Channel>(&channel, [](auto*) {}));
  struct Call {
    grpc::ClientContext context;
    v1::GradeItemResponse response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  absl::BlockingCounter pending(static_cast<int>(rows.size()));
  for (const Row& row : rows) {
    auto call = std::make_unique<Call>();
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    Call* c = call.get();
    stub->async()->GradeItem(&c->context, &row.request, &c->response,
                             [c, &pending](grpc::Status s) {
                               c->status = std::move(s);
                               pending.DecrementCount();
                             });
    calls.push_back(std::move(call));
  }
  pending.Wait();
  std::vector<absl::StatusOr<v1::GradeItemResponse>> out;
  for (auto& call : calls) {
    if (call->status.ok()) {
      out.push_back(call->response);
    } else {
      out.push_back(FromGrpcStatus(call->status));
    }
  }
  return out;
}

TEST(GraderServerTest, SampleRowsCountIsTheRealOne) {
  EXPECT_EQ(Sample::Get().dataset.examples.size(), 30u);
  EXPECT_EQ(Sample::Get().rows.size(), 352u);
}

TEST(GraderServerTest, GradesTheRealSampleAsTheSimulatorPredicts) {
  LlmSim sim = Sim({});
  auto server = StartServer(Options(sim.base_url));
  ASSERT_NE(server, nullptr);
  const std::vector<Row>& rows = Sample::Get().rows;
  auto results = GradeAll(*ChannelTo(*server), rows);
  int met = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    EXPECT_EQ(results[i]->criteria_met(), rows[i].predicted) << rows[i].request.request_id();
    EXPECT_EQ(results[i]->attempts(), 1);
    EXPECT_EQ(results[i]->request_id(), rows[i].request.request_id());
    EXPECT_FALSE(results[i]->grader_model().empty());
    EXPECT_GT(results[i]->usage().prompt_tokens(), 0);
    met += results[i]->criteria_met() ? 1 : 0;
  }
  // Both verdicts occur, so a constant answer could not pass.
  EXPECT_GT(met, 0);
  EXPECT_LT(met, static_cast<int>(rows.size()));
  EXPECT_EQ(server->metrics().RpcCount("GradeItem", absl::StatusCode::kOk), rows.size());
  EXPECT_EQ(server->metrics().UpstreamCalls("200"), rows.size());
}

TEST(GraderServerTest, GradeReplyScoresEveryTaskFromThePredictedVerdicts) {
  LlmSim sim = Sim({});
  auto server = StartServer(Options(sim.base_url));
  ASSERT_NE(server, nullptr);
  auto stub = v1::Grader::NewStub(ChannelTo(*server));
  const Sample& sample = Sample::Get();
  size_t row = 0;
  for (const Example& example : sample.dataset.examples) {
    v1::GradeReplyRequest request;
    const v1::GradeItemRequest& first = sample.rows[row].request;
    *request.mutable_conversation() = first.conversation();
    request.set_reply(first.reply());
    request.set_request_id(example.prompt_id);
    request.set_prompt_cache_key(example.prompt_id);
    std::vector<bool> predicted;
    for (size_t i = 0; i < example.rubrics.size(); ++i, ++row) {
      *request.add_rubric_items() = sample.rows[row].request.rubric_item();
      predicted.push_back(sample.rows[row].predicted);
    }
    grpc::ClientContext context;
    v1::GradeReplyResponse response;
    grpc::Status status = stub->GradeReply(&context, request, &response);
    ASSERT_TRUE(status.ok()) << example.prompt_id << ": " << status.error_message();
    ASSERT_EQ(response.verdicts_size(), static_cast<int>(example.rubrics.size()));
    for (size_t i = 0; i < predicted.size(); ++i) {
      EXPECT_EQ(response.verdicts(static_cast<int>(i)).criteria_met(), predicted[i]);
    }
    std::optional<double> score = CalculateScore(example.rubrics, predicted);
    ASSERT_TRUE(score.has_value());
    EXPECT_DOUBLE_EQ(response.score(), *score) << example.prompt_id;
  }
}

// One fault kind at 10%: every row still gets exactly the predicted verdict.
class FaultTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FaultTest, TenPercentFaultsNeverChangeAVerdict) {
  LlmSim sim = Sim({GetParam() + "=0.1"});
  GraderServerOptions options = Options(sim.base_url);
  // Short only where a hang must time out (3 s: under TSan on a loaded 2-core machine, 1 s
  // timed out the answered requests of one row 12 times in a row); elsewhere long enough for a
  // slow (sanitizer or loaded) machine to answer 352 concurrent requests without spurious
  // timeouts.
  options.llm.attempt_timeout = GetParam() == "--fault-hang" ? absl::Seconds(3) : absl::Seconds(20);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  const std::vector<Row>& rows = Sample::Get().rows;
  auto results = GradeAll(*ChannelTo(*server), rows);
  int retried = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    EXPECT_EQ(results[i]->criteria_met(), rows[i].predicted) << rows[i].request.request_id();
    retried += results[i]->attempts() > 1 ? 1 : 0;
  }
  if (GetParam() == "--fault-fenced") {
    EXPECT_EQ(retried, 0);  // a ```json fence is parsed, as the reference does
  } else {
    // libcurl itself re-sends a request whose reused connection was reset before any byte
    // came back, so fewer resets than injected reach the retry policy.
    EXPECT_GT(retried, 3) << "the fault was not injected";
  }
}

INSTANTIATE_TEST_SUITE_P(EachKind, FaultTest,
                         ::testing::Values("--fault-429", "--fault-500", "--fault-503",
                                           "--fault-malformed", "--fault-fenced",
                                           "--fault-nonobject", "--fault-hang", "--fault-reset"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name = param_info.param.substr(8);
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

// Every attempt fails and the budget is 2 attempts: every row is an error, never a verdict.
struct BudgetCase {
  std::string flag;
  absl::StatusCode code;
};

class RetryBudgetTest : public ::testing::TestWithParam<BudgetCase> {};

TEST_P(RetryBudgetTest, AllFaultsExhaustTheBudgetAndReturnErrors) {
  LlmSim sim = Sim({GetParam().flag + "=1"});
  GraderServerOptions options = Options(sim.base_url);
  options.retry.max_attempts = 2;
  // Short only where a hang must time out (see FaultTest).
  options.llm.attempt_timeout =
      GetParam().flag == "--fault-hang" ? absl::Milliseconds(300) : absl::Seconds(20);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::vector<Row> rows(Sample::Get().rows.begin(), Sample::Get().rows.begin() + 40);
  auto results = GradeAll(*ChannelTo(*server), rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_THAT(results[i], StatusIs(GetParam().code, HasSubstr("after 2 attempts"))) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EachKind, RetryBudgetTest,
    ::testing::Values(BudgetCase{"--fault-429", absl::StatusCode::kResourceExhausted},
                      BudgetCase{"--fault-500", absl::StatusCode::kUnavailable},
                      BudgetCase{"--fault-503", absl::StatusCode::kUnavailable},
                      BudgetCase{"--fault-malformed", absl::StatusCode::kUnavailable},
                      BudgetCase{"--fault-nonobject", absl::StatusCode::kUnavailable},
                      BudgetCase{"--fault-hang", absl::StatusCode::kDeadlineExceeded},
                      BudgetCase{"--fault-reset", absl::StatusCode::kUnavailable}),
    [](const ::testing::TestParamInfo<BudgetCase>& param_info) {
      std::string name = param_info.param.flag.substr(8);
      name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
      return name;
    });

std::string CompletionBody(const std::string& content) {
  return absl::StrCat(
      R"({"id":"x","object":"chat.completion","model":"loopback","choices":[{"index":0,)",
      R"("message":{"role":"assistant","content":)", content,
      R"(},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2}})");
}

// A loopback chat-completions endpoint that answers every request with the same verdict.
absl::StatusOr<std::unique_ptr<LoopbackHttpServer>> StartVerdictUpstream(bool criteria_met) {
  return LoopbackHttpServer::Start([criteria_met](const LoopbackRequest&) {
    LoopbackResponse r;
    r.body =
        CompletionBody(criteria_met ? R"("{\"criteria_met\": true, \"explanation\": \"ok\"}")"
                                    : R"("{\"criteria_met\": false, \"explanation\": \"no\"}")");
    r.headers = {{"Content-Type", "application/json"}};
    return r;
  });
}

TEST(GraderServerTest, UpstreamBodyIsExactlyBuildChatCompletionBody) {
  auto loopback = StartVerdictUpstream(/*criteria_met=*/true);
  ASSERT_TRUE(loopback.ok()) << loopback.status();
  GraderServerOptions options = Options((*loopback)->base_url() + "/v1");
  options.llm.api_key = "sk-test-SECRET";
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::vector<Row> rows(Sample::Get().rows.begin(), Sample::Get().rows.begin() + 30);
  auto results = GradeAll(*ChannelTo(*server), rows);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  std::multiset<std::string> expected, received;
  for (const Row& row : rows) expected.insert(row.expected_body);
  for (const LoopbackRequest& request : (*loopback)->requests()) {
    received.insert(request.body);
    EXPECT_EQ(request.uri, "/v1/chat/completions");
    EXPECT_EQ(request.Header("Authorization"), "Bearer sk-test-SECRET");
    EXPECT_EQ(request.Header("Content-Type"), "application/json");
  }
  EXPECT_TRUE(expected == received);
}

// A conversation far over the HTTP client's 64 KiB streaming threshold, with a <<rubric_item>>
// inside (substituted too: quirk 11) and bytes JSON must escape: the items share one rendered
// conversation, yet each body on the wire is exactly BuildChatCompletionBody's.
TEST(GraderServerTest, ALargeConversationGoesUpstreamByteForByte) {
  auto loopback = StartVerdictUpstream(/*criteria_met=*/false);
  ASSERT_TRUE(loopback.ok()) << loopback.status();
  auto server = StartServer(Options((*loopback)->base_url() + "/v1"));
  ASSERT_NE(server, nullptr);
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate tmpl,
                          GraderTemplate::Load(hb::testing::ReferenceTemplatePath()));
  const std::vector<Message> conversation = {
      {"user", std::string(300 << 10, 'a') + " \"q\" \\ \n\x01 <<rubric_item>> \xC3\xA9"}};
  v1::GradeReplyRequest request;
  request.add_conversation()->set_role(conversation[0].role);
  request.mutable_conversation(0)->set_content(conversation[0].content);
  request.set_reply("Rest.");
  request.set_prompt_cache_key("p1");
  std::multiset<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    RubricItem item;
    item.criterion = absl::StrCat("criterion ", i, " \"quoted\"");
    item.points = i + 1;
    item.points_text = absl::StrCat(i + 1);
    v1::RubricItem* out = request.add_rubric_items();
    out->set_criterion(item.criterion);
    out->set_points(item.points);
    out->set_points_text(item.points_text);
    expected.insert(BuildChatCompletionBody(
        GraderSettings{},
        tmpl.Fill(RenderGradedConversation(conversation, "Rest."), RenderRubricItem(item)), "p1"));
  }
  grpc::ClientContext context;
  v1::GradeReplyResponse response;
  grpc::Status status =
      v1::Grader::NewStub(ChannelTo(*server))->GradeReply(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::multiset<std::string> received;
  for (const LoopbackRequest& r : (*loopback)->requests()) received.insert(r.body);
  EXPECT_TRUE(expected == received);
}

TEST(GraderServerTest, TheApiKeyNeverLeaksIntoStatusesLogsOrMetrics) {
  constexpr char kKey[] = "sk-test-SECRET";
  auto loopback = LoopbackHttpServer::Start([&](const LoopbackRequest& request) {
    LoopbackResponse r;
    r.status = absl::StrContains(request.body, "Patient") ? 500 : 401;
    r.body = absl::StrCat(R"({"error": {"message": "Incorrect API key provided: )", kKey,
                          R"(", "type": "invalid_request_error"}})");
    return r;
  });
  ASSERT_TRUE(loopback.ok()) << loopback.status();
  // Capture every log line, debug included.
  hb::testing::CapturedLog log(spdlog::level::trace);

  GraderServerOptions options = Options((*loopback)->base_url() + "/v1");
  options.llm.api_key = kKey;
  options.retry.max_attempts = 2;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  std::vector<Row> rows(Sample::Get().rows.begin(), Sample::Get().rows.begin() + 12);
  auto results = GradeAll(*ChannelTo(*server), rows);
  std::ostringstream metrics_text;
  prometheus::TextSerializer().Serialize(metrics_text, server->registry().Collect());
  server->Shutdown(absl::ZeroDuration());
  server.reset();

  ASSERT_FALSE((*loopback)->requests().empty());
  EXPECT_EQ((*loopback)->requests()[0].Header("Authorization"), absl::StrCat("Bearer ", kKey));
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr(kKey)));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("Incorrect API key provided"));
  }
  EXPECT_THAT(log.text(), HasSubstr("grader"));  // the capture did see log lines
  EXPECT_THAT(log.text(), Not(HasSubstr("SECRET")));
  EXPECT_THAT(metrics_text.str(), HasSubstr("hb_grader_upstream_calls_total"));
  EXPECT_THAT(metrics_text.str(), Not(HasSubstr("SECRET")));
}

// True once `n` upstream calls are in flight at the same time; false after 30 s (a missed
// moment must fail the test, never spin forever).
bool AwaitUpstreamInFlight(GraderServer& server, int n) {
  return hb::testing::PollUntil([&] { return server.metrics().UpstreamInFlight() >= n; },
                                absl::Seconds(30), absl::Milliseconds(1));
}

TEST(GraderServerTest, HealthIsServingAndShutdownDrainsRpcsInFlight) {
  LlmSim sim = Sim({"--latency-ms=3000"});
  auto server = StartServer(Options(sim.base_url));
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  {
    auto health = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, request, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  }
  std::vector<Row> rows(Sample::Get().rows.begin(), Sample::Get().rows.begin() + 5);
  std::vector<absl::StatusOr<v1::GradeItemResponse>> results;
  std::thread client([&] { results = GradeAll(*channel, rows); });
  // Shut down while the five calls wait on the simulator's latency.
  const bool all_in_flight = AwaitUpstreamInFlight(*server, 5);
  server->Shutdown(absl::Seconds(20));
  client.join();
  ASSERT_TRUE(all_in_flight) << "the five upstream calls were never in flight together";
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.status();
}

TEST(GraderServerTest, ShutdownWithoutDrainCancelsHangingUpstreamCalls) {
  LlmSim sim = Sim({"--fault-hang=1"});
  GraderServerOptions options = Options(sim.base_url);
  options.llm.attempt_timeout = absl::Seconds(60);
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  std::vector<Row> rows(Sample::Get().rows.begin(), Sample::Get().rows.begin() + 3);
  std::vector<absl::StatusOr<v1::GradeItemResponse>> results;
  std::thread client([&] { results = GradeAll(*channel, rows); });
  const bool all_in_flight = AwaitUpstreamInFlight(*server, 3);
  const absl::Time start = absl::Now();
  server->Shutdown(absl::Milliseconds(100));
  client.join();
  ASSERT_TRUE(all_in_flight) << "the three upstream calls were never in flight together";
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  for (const auto& r : results) EXPECT_FALSE(r.ok());
  // The cancelled upstream calls end on the HTTP loop's thread, possibly just after the RPCs.
  hb::testing::PollUntil([&] { return server->metrics().UpstreamInFlight() == 0; },
                         absl::Seconds(10), absl::Milliseconds(1));
  EXPECT_EQ(server->metrics().UpstreamInFlight(), 0);
}

// One unary call with raw request bytes, so a test can send what no stub would. Blocks.
// A server with no upstream: enough for the transport's conventions.
std::unique_ptr<GraderServer> StartServerWithoutUpstream(bool reflection = false) {
  GraderServerOptions options = Options("http://127.0.0.1:1/v1");
  options.reflection = reflection;
  return StartServer(options);
}

grpc::health::v1::HealthCheckResponse::ServingStatus HealthOf(grpc::Channel& channel,
                                                              const std::string& service,
                                                              grpc::Status* status) {
  auto health =
      grpc::health::v1::Health::NewStub(std::shared_ptr<grpc::Channel>(&channel, [](auto*) {}));
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  *status = health->Check(&context, request, &response);
  return response.status();
}

TEST(GraderServerTest, HealthServesTheEmptyNameAndTheGraderService) {
  auto server = StartServerWithoutUpstream();
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  for (const std::string service : {"", "healthbench.grader.v1.Grader"}) {
    grpc::Status status;
    EXPECT_EQ(HealthOf(*channel, service, &status), grpc::health::v1::HealthCheckResponse::SERVING)
        << service;
    EXPECT_TRUE(status.ok()) << service << ": " << status.error_message();
  }
  grpc::Status status;
  HealthOf(*channel, "no.such.Service", &status);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

// gRPC 1.51 receives a whole message before it applies the receive limit (grpc/grpc#43012).
// The transport's memory quota (the limit plus headroom) resets the stream once it holds more,
// so a 64 MB request is refused before it is all in memory, not after.
TEST(GraderServerTest, ARequestFarOverTheLimitIsResetBeforeItIsAllReceived) {
  GraderServerOptions options = Options("http://127.0.0.1:1/v1");
  options.max_receive_message_bytes = 8 << 20;  // hb-grader's default (twice the prompt limit)
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  v1::GradeReplyRequest request;
  request.add_conversation()->set_role("user");
  request.mutable_conversation(0)->set_content("Hi");
  request.set_reply(std::string(64 << 20, 'x'));
  request.add_rubric_items()->set_criterion("c");
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::GradeReplyResponse response;
  grpc::Status status =
      v1::Grader::NewStub(ChannelTo(*server))->GradeReply(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  // "Received message larger than max" is the answer after the whole message arrived.
  EXPECT_THAT(status.error_message(), Not(HasSubstr("larger than max")));
  // The server still serves.
  grpc::Status health;
  EXPECT_EQ(HealthOf(*ChannelTo(*server), "", &health),
            grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST(GraderServerTest, ASecondServerOnAPortInUseFailsToStart) {
  auto first = StartServerWithoutUpstream();
  ASSERT_NE(first, nullptr);
  GraderServerOptions options = Options("http://127.0.0.1:1/v1");
  options.listen_address = absl::StrCat("127.0.0.1:", first->port());
  EXPECT_THAT(GraderServer::Start(options).status(),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr(absl::StrCat("could not listen on 127.0.0.1:", first->port(),
                                              ": the address is in use"))));
}

// ServerReflectionRequest{list_services: ""} on the wire: field 7, length 0.
constexpr char kListServicesRequest[] = "\x3a\x00";
// Both versions clients ask for (v1 first, then v1alpha); the messages are the same.
constexpr const char* kReflectionMethods[] = {
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"};

TEST(GraderServerTest, ReflectionIsOffByDefault) {
  auto server = StartServerWithoutUpstream();
  ASSERT_NE(server, nullptr);
  for (const char* method : kReflectionMethods) {
    std::string response;
    grpc::Status status =
        RawUnaryCall(*ChannelTo(*server), method, std::string(kListServicesRequest, 2), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED) << method;
  }
}

TEST(GraderServerTest, ReflectionListsTheGraderWhenAskedFor) {
  auto server = StartServerWithoutUpstream(/*reflection=*/true);
  ASSERT_NE(server, nullptr);
  for (const char* method : kReflectionMethods) {
    std::string response;
    grpc::Status status =
        RawUnaryCall(*ChannelTo(*server), method, std::string(kListServicesRequest, 2), &response);
    ASSERT_TRUE(status.ok()) << method << ": " << status.error_message();
    EXPECT_THAT(response, HasSubstr("healthbench.grader.v1.Grader")) << method;
    EXPECT_THAT(response, HasSubstr("grpc.reflection.v1.ServerReflection")) << method;
  }
}

TEST(GraderServerTest, MalformedRequestBytesAreInvalidArgument) {
  auto server = StartServerWithoutUpstream();
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  for (const std::string method : {"GradeItem", "GradeReply"}) {
    const std::string path = absl::StrCat("/healthbench.grader.v1.Grader/", method);
    std::string response;
    // An unterminated varint: no protobuf message parses from it.
    grpc::Status status = RawUnaryCall(*channel, path, "\x08\xff\xff", &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << path;
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat("malformed request for ", path,
                                       ": the bytes do not parse as its request message")));
  }
}

TEST(GraderServerTest, MalformedRequestsAreLoggedThroughTheRateLimitedLog) {
  auto server = StartServerWithoutUpstream();
  ASSERT_NE(server, nullptr);
  auto channel = ChannelTo(*server);
  const std::string path = "/healthbench.grader.v1.Grader/GradeItem";
  for (int i = 0; i < 8; ++i) {
    std::string response;
    EXPECT_EQ(RawUnaryCall(*channel, path, "\x08\xff\xff", &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  // 5 lines per kind per 10 s are written, the other 3 counted as suppressed.
  EXPECT_EQ(server->refused_log().suppressed_total("GradeItem INVALID_ARGUMENT"), 3);
}

TEST(GraderServerTest, GetInfoReportsWhatTheGraderGradesWithAndNoCredentials) {
  GraderServerOptions options =
      Options("https://alice:s3cret@127.0.0.1:1/v1?api-version=2024&api-key=k3y");
  options.settings.model = "grader-side-model";
  options.settings.temperature = 0.25;
  options.settings.max_tokens = 77;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Grader::NewStub(ChannelTo(*server));
  grpc::ClientContext context;
  v1::GraderInfo info;
  grpc::Status status = stub->GetInfo(&context, v1::GetInfoRequest(), &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.model(), "grader-side-model");
  EXPECT_EQ(info.temperature(), 0.25);
  EXPECT_EQ(info.max_tokens(), 77);
  EXPECT_EQ(info.system_message(), "You are a helpful assistant.");
  absl::StatusOr<GraderTemplate> tmpl = GraderTemplate::Load(hb::testing::ReferenceTemplatePath());
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(info.template_sha256(), tmpl->sha256());
  EXPECT_EQ(info.upstream_base_url(),
            "https://[redacted]@127.0.0.1:1/v1?api-version=2024&api-key=[redacted]");
  EXPECT_FALSE(info.version().empty());
  EXPECT_THAT(info.DebugString(), Not(HasSubstr("s3cret")));
  EXPECT_THAT(info.DebugString(), Not(HasSubstr("k3y")));
}

TEST(GraderServerTest, GetInfoNeedsTheTokenLikeEveryMethod) {
  GraderServerOptions options = Options("http://127.0.0.1:1/v1");
  absl::StatusOr<BearerTokens> tokens = BearerTokens::FromList({"0123456789abcdef-token"}, "test");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  options.security.tokens = *tokens;
  auto server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto stub = v1::Grader::NewStub(ChannelTo(*server));
  v1::GraderInfo info;
  grpc::ClientContext anonymous;
  EXPECT_EQ(stub->GetInfo(&anonymous, v1::GetInfoRequest(), &info).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext with_token;
  AttachCallerToken(with_token, "0123456789abcdef-token");
  grpc::Status status = stub->GetInfo(&with_token, v1::GetInfoRequest(), &info);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.model(), GraderSettings{}.model);
}

TEST(GraderServerTest, StartFailsOnAWrongTemplate) {
  std::string dir = hb::testing::MakeTempDir();
  GraderServerOptions options = Options("http://127.0.0.1:1/v1");
  options.template_path = dir + "/missing.txt";
  EXPECT_FALSE(GraderServer::Start(options).ok());
}

}  // namespace
}  // namespace hb
