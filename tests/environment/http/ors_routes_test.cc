// hb-env's route table (OrsRoutes::Register) driven without a server, as the request fuzzer
// drives it: the ORS and trainer rows, 404/405, the token gate, and a call refused up front
// answered inline. The listener itself is tested in tests/environment/ors/ors_http_server_test.
#include "environment/http/ors_routes.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_environment.h"
#include "tests/testing/recording_http_exchange.h"

namespace hb::env {
namespace {

using ::hb::testing::RecordedHttpReply;
using ::hb::testing::RecordingHttpExchange;
using ::testing::HasSubstr;

class OrsRoutesTest : public ::testing::Test {
 protected:
  void Build(OrsServerOptions options) {
    env_.AddTask("dev", {"p0", {"theme:a"}, "user: zero"});
    trainer_ = std::make_unique<TrainerRoutes>(env_, options.trainer, nullptr, inbox_);
    routes_ = std::make_unique<OrsRoutes>(env_, clock_, options, inbox_);
    routes_->Register(&table_, trainer_.get());
    absl::MutexLock lock(&inbox_->mu);
    inbox_->loop_thread = std::this_thread::get_id();  // this thread plays the loop
  }

  // The one reply to `method path` with `headers` and `body`.
  RecordedHttpReply Send(absl::string_view method, absl::string_view path,
                         std::vector<std::pair<absl::string_view, absl::string_view>> headers = {},
                         absl::string_view body = "") {
    HttpServerRequest request;
    request.method = method;
    request.path = path;
    request.headers = std::move(headers);
    request.body = body;
    RecordingHttpExchange exchange;
    table_.Dispatch(request, exchange);
    EXPECT_EQ(exchange.replies().size(), 1u) << method << " " << path;
    return exchange.replies().empty() ? RecordedHttpReply{} : exchange.replies()[0];
  }

  // A session created on task p0; its id.
  std::string OpenSession() {
    const RecordedHttpReply issued = Send("POST", "/create_session");
    const size_t at = issued.body.find("data: ") + 6;
    const std::string sid = issued.body.substr(at, issued.body.find('\n', at) - at);
    EXPECT_EQ(
        Send("POST", "/create", {{"X-Session-ID", sid}}, R"({"task_spec":{"prompt_id":"p0"}})")
            .status,
        200);
    return sid;
  }

  ::hb::testing::FakeClock clock_;
  ::hb::testing::FakeEnvironment env_;
  std::shared_ptr<LoopInbox> inbox_ = std::make_shared<LoopInbox>();
  std::unique_ptr<TrainerRoutes> trainer_;
  std::unique_ptr<OrsRoutes> routes_;
  HttpRouteTable table_;
};

TEST_F(OrsRoutesTest, RowsAnswerAndUnknownPathsOrMethodsAreRefusedInJson) {
  Build({});
  const RecordedHttpReply health = Send("GET", "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, R"({"status":"ok"})");
  EXPECT_EQ(Send("GET", "/HealthBench/splits").status, 200);

  const RecordedHttpReply wrong = Send("GET", "/healthbench/tasks");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.Header("Allow"), "POST");
  EXPECT_EQ(Send("POST", "/health").Header("Allow"), "GET");
  EXPECT_EQ(Send("GET", "/ng-rollout/r1/verify").Header("Allow"), "POST");

  EXPECT_EQ(Send("GET", "/healthbench/nothing").body, R"({"detail":"Not Found"})");
  EXPECT_EQ(Send("POST", "/ng-rollout/r1/get_reward").status, 404);  // not a NeMo-Gym route
  const RecordedHttpReply unknown = Send("GET", "/other/splits");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(unknown.body, HasSubstr(R"(unknown environment \"other\")"));
  EXPECT_EQ(Send("GET", "/healthbench/prompt").body,
            R"({"detail":"X-Session-ID header is required"})");
}

TEST_F(OrsRoutesTest, TheGateRefusesEveryRouteButHealthWithoutAToken) {
  OrsServerOptions options;
  options.tokens = *BearerTokens::FromList({"secret-token-0123456789"});
  Build(options);
  EXPECT_EQ(Send("GET", "/health").status, 200);
  EXPECT_EQ(Send("GET", "/list_environments").status, 401);
  EXPECT_EQ(Send("GET", "/nowhere").status, 401);
  EXPECT_EQ(Send("GET", "/list_environments", {{"Authorization", "Bearer secret-token-0123456789"}})
                .status,
            200);
  EXPECT_EQ(Send("GET", "/list_environments", {{"X-API-Key", "secret-token-0123456789"}}).status,
            200);
}

TEST_F(OrsRoutesTest, ACallRefusedUpFrontIsAnsweredWithItsStatusWithoutALoop) {
  Build({});
  const std::string sid = OpenSession();
  env_.RejectUpFront(absl::ResourceExhaustedError("backlog full"));
  const RecordedHttpReply refused = Send("POST", "/healthbench/call", {{"X-Session-ID", sid}},
                                         R"({"name":"answer","input":{"answer":"hi"}})");
  EXPECT_EQ(refused.status, 429);
  EXPECT_FALSE(refused.Header("Retry-After").empty());
  EXPECT_EQ(refused.body, R"({"detail":"backlog full"})");
}

}  // namespace
}  // namespace hb::env
