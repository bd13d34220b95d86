#include "llm/endpoint_preflight.h"

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A resolver that records the hosts it was asked for and answers `answer`.
struct FakeResolver {
  absl::Status answer;
  std::vector<std::string> asked;

  HostResolver AsResolver() {
    return [this](const std::string& host) {
      asked.push_back(host);
      return answer;
    };
  }
};

EndpointPreflight Grader(const std::string& url, bool has_key, bool is_default = false) {
  EndpointPreflight endpoint;
  endpoint.base_url = url;
  endpoint.has_api_key = has_key;
  endpoint.url_flag = "--llm-base-url";
  endpoint.url_is_default = is_default;
  endpoint.key_source = "$OPENAI_API_KEY or --llm-api-key-file";
  return endpoint;
}

// Proxy variables of the process are cleared for the duration of a test (and restored).
class EndpointPreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kProxyVariables) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value == nullptr ? "" : value, value != nullptr);
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value, was_set] : saved_) {
      if (was_set) {
        ::setenv(name, value.c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }

  static constexpr const char* kProxyVariables[] = {"https_proxy", "HTTPS_PROXY", "http_proxy",
                                                    "ALL_PROXY", "all_proxy"};
  std::vector<std::tuple<const char*, std::string, bool>> saved_;
  FakeResolver resolver_;
};

TEST_F(EndpointPreflightTest, UrlHostDropsSchemeUserPortAndBrackets) {
  EXPECT_EQ(UrlHost("https://api.openai.com/v1"), "api.openai.com");
  EXPECT_EQ(UrlHost("http://user:secret@vllm.internal:8000/v1"), "vllm.internal");
  EXPECT_EQ(UrlHost("http://127.0.0.1:8000/policy/v1"), "127.0.0.1");
  EXPECT_EQ(UrlHost("http://[::1]:8000/v1"), "::1");
  EXPECT_EQ(UrlHost("not a url"), "");
}

TEST_F(EndpointPreflightTest, OnlyRemoteHttpsEndpointsNeedAKey) {
  EXPECT_TRUE(EndpointNeedsApiKey("https://api.openai.com/v1"));
  EXPECT_TRUE(EndpointNeedsApiKey("HTTPS://gateway.example.com:8443/v1"));
  for (const char* keyless :
       {"http://vllm.internal:8000/v1", "https://127.0.0.1:8443/v1", "https://localhost/v1",
        "https://[::1]:8443/v1", "http://127.0.0.1:8000/policy/v1"}) {
    EXPECT_FALSE(EndpointNeedsApiKey(keyless)) << keyless;
  }
}

TEST_F(EndpointPreflightTest, NoKeyForTheDefaultRemoteEndpointFailsBeforeResolving) {
  EXPECT_THAT(PreflightEndpoint(Grader("https://api.openai.com/v1", false, /*is_default=*/true),
                                resolver_.AsResolver()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "no API key for https://api.openai.com/v1 (the default --llm-base-url): "
                       "set $OPENAI_API_KEY or --llm-api-key-file, or give --llm-base-url a "
                       "server that needs none (on this machine, or plain http:// inside the "
                       "cluster: vLLM, hb-llm-sim); an https server that takes no key accepts "
                       "any placeholder key"));
  EXPECT_THAT(resolver_.asked, IsEmpty());
}

TEST_F(EndpointPreflightTest, TheMessageNamesTheGivenFlagAndRedactsTheUrl) {
  EndpointPreflight policy;
  policy.base_url = "https://user:hunter2@api.example.com/v1?api-key=hunter2";
  policy.url_flag = "--policy tuned";
  policy.key_source = "$POLICY_API_KEY or --policy-api-key-file";
  const absl::Status status = PreflightEndpoint(policy, resolver_.AsResolver());
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr("no API key for https://[redacted]@api.example.com/"
                                         "v1?api-key=[redacted] (--policy tuned): set "
                                         "$POLICY_API_KEY or --policy-api-key-file, or give "
                                         "--policy tuned a server")));
  EXPECT_THAT(status.message(), Not(HasSubstr("hunter2")));
}

TEST_F(EndpointPreflightTest, LocalAndClusterEndpointsNeedNoKeyButMustResolve) {
  EXPECT_THAT(PreflightEndpoint(Grader("http://127.0.0.1:8000/v1", false), resolver_.AsResolver()),
              IsOk());
  EXPECT_THAT(PreflightEndpoint(Grader("http://vllm:8000/v1", false), resolver_.AsResolver()),
              IsOk());
  EXPECT_THAT(resolver_.asked, ElementsAre("127.0.0.1", "vllm"));
}

TEST_F(EndpointPreflightTest, AHostThatDoesNotResolveIsNamedWithItsFlag) {
  resolver_.answer = absl::NotFoundError("Name or service not known");
  EXPECT_THAT(
      PreflightEndpoint(Grader("https://user:pw@api.openai.com:443/v1", true, /*is_default=*/false),
                        resolver_.AsResolver()),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               "cannot resolve host 'api.openai.com' of --llm-base-url "
               "https://[redacted]@api.openai.com:443/v1: Name or service not known. Check the "
               "host name in --llm-base-url, and this machine's DNS and network (no request was "
               "sent)"));
  EXPECT_THAT(resolver_.asked, ElementsAre("api.openai.com"));
}

TEST_F(EndpointPreflightTest, ThroughAProxyTheHostIsNotResolvedHere) {
  resolver_.answer = absl::NotFoundError("Name or service not known");
  ::setenv("https_proxy", "http://proxy.internal:3128", 1);
  EXPECT_THAT(PreflightEndpoint(Grader("https://api.openai.com/v1", true), resolver_.AsResolver()),
              IsOk());
  // The https proxy does not carry plain http:// (libcurl reads http_proxy for those).
  EXPECT_THAT(PreflightEndpoint(Grader("http://vllm:8000/v1", false), resolver_.AsResolver()),
              Not(IsOk()));
  ::setenv("ALL_PROXY", "socks5h://proxy.internal:1080", 1);
  EXPECT_THAT(PreflightEndpoint(Grader("http://vllm:8000/v1", false), resolver_.AsResolver()),
              IsOk());
  EXPECT_THAT(resolver_.asked, ElementsAre("vllm"));
}

// The real resolver (getaddrinfo): numeric addresses and localhost resolve without DNS; a name
// under .invalid never resolves (RFC 6761).
TEST_F(EndpointPreflightTest, TheRealResolverAnswers) {
  EXPECT_THAT(ResolveHost("127.0.0.1"), IsOk());
  EXPECT_THAT(ResolveHost("::1"), IsOk());
  EXPECT_THAT(ResolveHost("localhost"), IsOk());
  EXPECT_THAT(ResolveHost("hb-preflight-test.invalid"), Not(IsOk()));
}

}  // namespace
}  // namespace hb

namespace hb {
namespace {

// An HttpClient that answers every request at once with `answer` and keeps the requests.
class CannedHttpClient final : public HttpClient {
 public:
  explicit CannedHttpClient(absl::StatusOr<HttpResponse> answer) : answer_(std::move(answer)) {}
  CallId Post(HttpRequest request, HttpCallback done) override {
    requests.push_back(std::move(request));
    done(answer_);
    return requests.size();
  }
  void Cancel(CallId) override {}
  std::vector<HttpRequest> requests;

 private:
  absl::StatusOr<HttpResponse> answer_;
};

HttpResponse Answer(int status, std::string body) {
  HttpResponse response;
  response.status_code = status;
  response.body = std::move(body);
  return response;
}

EndpointPreflight Judge() {
  EndpointPreflight endpoint = Grader("http://127.0.0.1:8000/v1/", true);
  endpoint.api_key = "sk-secret";
  endpoint.headers = {{"api-key", "header-secret"}};
  return endpoint;
}

// The probe asks the model list with the key and headers; a JSON answer passes silently.
TEST(ProbeEndpointTest, AnOpenAiCompatibleJudgePasses) {
  CannedHttpClient http(Answer(200, R"({"object":"list","data":[{"id":"m"}]})"));
  HB_ASSERT_OK_AND_ASSIGN(const std::string warning, ProbeEndpoint(Judge(), http));
  EXPECT_EQ(warning, "");
  ASSERT_EQ(http.requests.size(), 1u);
  const HttpRequest& request = http.requests[0];
  EXPECT_EQ(request.method, "GET");
  EXPECT_EQ(request.url, "http://127.0.0.1:8000/v1/models");
  EXPECT_THAT(request.headers, ::testing::Contains(std::pair<std::string, std::string>(
                                   "Authorization", "Bearer sk-secret")));
  EXPECT_THAT(request.headers,
              ::testing::Contains(std::pair<std::string, std::string>("api-key", "header-secret")));
  EXPECT_EQ(request.timeout, absl::Seconds(5));
}

// What no run can get past is refused with the reason, the URL and the flag (exit 2), never a
// secret.
TEST(ProbeEndpointTest, ADeadOrWrongJudgeIsRefusedWithTheReason) {
  const struct {
    absl::StatusOr<HttpResponse> answer;
    std::string message;
  } cases[] = {
      {absl::UnavailableError("Couldn't connect to server (connection refused) sk-secret"),
       "cannot reach the judge at http://127.0.0.1:8000/v1/models (--llm-base-url): Couldn't "
       "connect to server (connection refused) [redacted]. Is the server running, and are the "
       "host and port right? No grading request was sent. Fix --llm-base-url (or start the "
       "server), then run again"},
      {Answer(401, R"({"error":{"message":"Incorrect API key"}})"),
       "GET http://127.0.0.1:8000/v1/models (--llm-base-url) answered HTTP 401: "
       "{\"error\":{\"message\":\"Incorrect API key\"}}. The judge refused the API key: check "
       "$OPENAI_API_KEY or --llm-api-key-file (and --llm-header for a gateway's key). No "
       "grading request was sent."},
      {Answer(403, "forbidden"), "answered HTTP 403: forbidden. The judge refused the API key"},
      {Answer(404, "{}"),
       "answered HTTP 404: {}. This is not an OpenAI-compatible base URL: it usually ends in /v1"},
      {Answer(200, "<html><body>It works!</body></html>"),
       "answered HTTP 200: '<html><body>It works!</body></html>', which is not JSON: this is not "
       "an OpenAI-compatible endpoint."},
  };
  for (const auto& c : cases) {
    CannedHttpClient http(c.answer);
    EXPECT_THAT(ProbeEndpoint(Judge(), http),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(c.message)))
        << c.message;
  }
}

// A passing outage, a busy server or a gateway without the model list is no reason to stop:
// grading starts, with a warning.
TEST(ProbeEndpointTest, AnOutageOrSlownessOnlyWarns) {
  const struct {
    absl::StatusOr<HttpResponse> answer;
    std::string warning;
  } cases[] = {
      {Answer(503, "busy"),
       "GET http://127.0.0.1:8000/v1/models (--llm-base-url) answered HTTP 503: busy; grading "
       "starts anyway"},
      {Answer(429, "slow down"), "answered HTTP 429: slow down; grading starts anyway"},
      {Answer(405, ""), "answered HTTP 405: ; grading starts anyway"},
      {absl::DeadlineExceededError("timeout"),
       "the judge at http://127.0.0.1:8000/v1/models (--llm-base-url) did not answer within 5s; "
       "grading starts anyway"},
  };
  for (const auto& c : cases) {
    CannedHttpClient http(c.answer);
    HB_ASSERT_OK_AND_ASSIGN(const std::string warning, ProbeEndpoint(Judge(), http));
    EXPECT_THAT(warning, HasSubstr(c.warning));
  }
}

}  // namespace
}  // namespace hb
