// Starts the real hb-llm-sim binary on 127.0.0.1:0 and talks HTTP to it with libcurl.
// Readiness is the first stdout line ("listening on HOST:PORT"), never a sleep.
#include <curl/curl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/shared_data.h"

namespace hb {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The simulator as a child process (hb::testing::ChildProcess: its first line is read, and
// its exit awaited, within a deadline); SIGKILLed on destruction unless Terminate() ran.
class SimProcess {
 public:
  explicit SimProcess(std::vector<std::string> flags) {
    const std::string binary = ::hb::testing::BinaryDir() + "/simulator/hb-llm-sim";
    std::vector<std::string> args = {binary, "--listen",    "127.0.0.1:0", "--threads",
                                     "2",    "--log-level", "warn"};
    args.insert(args.end(), flags.begin(), flags.end());
    absl::StatusOr<std::unique_ptr<::hb::testing::ChildProcess>> process =
        ::hb::testing::ChildProcess::Spawn(args);
    if (!process.ok()) {
      ADD_FAILURE() << process.status();
      return;
    }
    process_ = *std::move(process);
    absl::StatusOr<std::string> line = process_->ReadFirstLine(absl::Seconds(20));
    if (!line.ok()) {
      ADD_FAILURE() << "hb-llm-sim printed no first line: " << line.status();
      return;
    }
    first_line_ = std::string(absl::StripTrailingAsciiWhitespace(*line));
    const size_t colon = first_line_.rfind(':');
    if (colon != std::string::npos) (void)absl::SimpleAtoi(first_line_.substr(colon + 1), &port_);
  }

  // SIGTERM and wait (at most 30 s, then SIGKILL); the exit status, or -1 on a signal death or
  // when the simulator did not exit in time.
  int Terminate() {
    if (process_ == nullptr) return -1;
    const int status = process_->Stop(SIGTERM, absl::Seconds(30));
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int port() const { return port_; }
  const std::string& first_line() const { return first_line_; }
  std::string Url(absl::string_view path) const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }

 private:
  std::unique_ptr<::hb::testing::ChildProcess> process_;
  std::string first_line_;
  int port_ = 0;
};

struct HttpResult {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  long new_connections = 0;
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    (*static_cast<std::map<std::string, std::string>*>(
        out))[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return size * n;
}

// One libcurl easy handle: reused, so requests share a keep-alive connection.
class Client {
 public:
  Client() : curl_(curl_easy_init()) {}
  ~Client() { curl_easy_cleanup(curl_); }

  HttpResult Post(const std::string& url, const std::string& body,
                  const std::string& authorization = "", long timeout_ms = 10000) {
    return Do(url, &body, authorization, timeout_ms);
  }
  HttpResult Get(const std::string& url) { return Do(url, nullptr, "", 10000); }

 private:
  HttpResult Do(const std::string& url, const std::string* body, const std::string& auth,
                long timeout_ms) {
    HttpResult result;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (!auth.empty()) headers = curl_slist_append(headers, ("Authorization: " + auth).c_str());
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
    if (body != nullptr) {
      curl_easy_setopt(curl_, CURLOPT_POST, 1L);
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body->c_str());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
    } else {
      curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &result.body);
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, AppendHeader);
    curl_easy_setopt(curl_, CURLOPT_HEADERDATA, &result.headers);
    result.code = curl_easy_perform(curl_);
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &result.status);
    curl_easy_getinfo(curl_, CURLINFO_NUM_CONNECTS, &result.new_connections);
    curl_slist_free_all(headers);
    return result;
  }

  CURL* curl_;
};

std::string GraderBody(absl::string_view user_content) {
  return absl::StrCat(
      R"({"model":"gpt-4.1-2025-04-14","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":")",
      user_content, R"("}],"temperature":0.5,"max_tokens":2048})");
}

std::string ReplyContent(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.c_str());
  if (!doc.IsObject() || !doc.HasMember("choices")) return "<no choices>";
  return doc["choices"][0]["message"]["content"].GetString();
}

class LlmSimIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

TEST_F(LlmSimIntegrationTest, AnswersWithThePredictedVerdictOverKeepAlive) {
  const std::string log_path = ::hb::testing::MakeTempDir() + "/requests.jsonl";
  SimProcess sim({"--request-log", log_path});
  ASSERT_GT(sim.port(), 0) << "first line: " << sim.first_line();
  EXPECT_EQ(sim.first_line(), absl::StrCat("listening on 127.0.0.1:", sim.port()));

  Client client;
  int met = 0;
  for (int i = 0; i < 20; ++i) {
    const std::string content = absl::StrCat("rubric item number ", i);
    HttpResult r = client.Post(sim.Url("/v1/chat/completions"), GraderBody(content));
    ASSERT_EQ(r.code, CURLE_OK);
    ASSERT_EQ(r.status, 200) << r.body;
    if (i > 0) {
      EXPECT_EQ(r.new_connections, 0) << "connection not kept alive";
    }
    EXPECT_EQ(r.headers["content-type"], "application/json");
    rapidjson::Document doc;
    doc.Parse(r.body.c_str());
    ASSERT_TRUE(doc.IsObject()) << r.body;
    EXPECT_STREQ(doc["object"].GetString(), "chat.completion");
    EXPECT_STREQ(doc["model"].GetString(), "gpt-4.1-2025-04-14");
    EXPECT_STREQ(doc["choices"][0]["message"]["role"].GetString(), "assistant");
    EXPECT_STREQ(doc["choices"][0]["finish_reason"].GetString(), "stop");
    EXPECT_TRUE(doc["usage"]["prompt_tokens_details"]["cached_tokens"].IsInt64());
    const bool expected = SimulatedVerdict(content);
    EXPECT_EQ(ReplyContent(r.body), SimulatedReplyContent(expected));
    met += expected;
  }
  EXPECT_GT(met, 0);
  EXPECT_LT(met, 20);

  HttpResult marker = client.Post(sim.Url("/chat/completions"), GraderBody("x [[sim:met=false]]"));
  EXPECT_EQ(ReplyContent(marker.body), SimulatedReplyContent(false));

  HttpResult health = client.Get(sim.Url("/healthz"));
  EXPECT_EQ(health.status, 200);
  HttpResult metrics = client.Get(sim.Url("/metrics"));
  EXPECT_THAT(metrics.body, HasSubstr("hb_sim_requests_total 21\n"));
  EXPECT_THAT(metrics.body, HasSubstr("hb_sim_responses_total{status=\"200\"} 21\n"));

  EXPECT_EQ(sim.Terminate(), 0);
  std::ifstream log(log_path);
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) {
    ++lines;
    EXPECT_THAT(line, StartsWith("{\"time\":"));
  }
  EXPECT_EQ(lines, 21);
}

TEST_F(LlmSimIntegrationTest, BadJsonIs400) {
  SimProcess sim({});
  ASSERT_GT(sim.port(), 0);
  Client client;
  HttpResult r = client.Post(sim.Url("/v1/chat/completions"), "{not json");
  EXPECT_EQ(r.status, 400);
  rapidjson::Document doc;
  doc.Parse(r.body.c_str());
  ASSERT_TRUE(doc.IsObject()) << r.body;
  EXPECT_STREQ(doc["error"]["type"].GetString(), "invalid_request_error");
  EXPECT_THAT(doc["error"]["message"].GetString(), HasSubstr("not valid JSON"));
  r = client.Post(sim.Url("/v1/chat/completions"), R"({"model":"m"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'messages' is a required property"));
}

// A 1 MB POST of '[' over a real socket: a clear 400, and the server keeps serving.
TEST_F(LlmSimIntegrationTest, AMegabyteOfOpenBracketsIsA400AndTheServerLivesOn) {
  SimProcess sim({});
  ASSERT_GT(sim.port(), 0);
  Client client;
  HttpResult r = client.Post(sim.Url("/v1/chat/completions"), std::string(1 << 20, '['));
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("request body is not valid JSON: nesting deeper than 64 levels"));
  EXPECT_EQ(client.Post(sim.Url("/v1/chat/completions"), GraderBody("x")).status, 200);
}

TEST_F(LlmSimIntegrationTest, ApiKeyIsEnforced) {
  SimProcess sim({"--api-key", "sk-sim-123"});
  ASSERT_GT(sim.port(), 0);
  Client client;
  EXPECT_EQ(client.Post(sim.Url("/v1/chat/completions"), GraderBody("x")).status, 401);
  EXPECT_EQ(client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"), "Bearer nope").status,
            401);
  EXPECT_EQ(
      client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"), "Bearer sk-sim-123").status,
      200);
}

TEST_F(LlmSimIntegrationTest, RpmLimitGives429WithHeaders) {
  SimProcess sim({"--rpm", "2"});
  ASSERT_GT(sim.port(), 0);
  Client client;
  HttpResult first = client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"));
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(first.headers["x-ratelimit-limit-requests"], "2");
  EXPECT_EQ(first.headers["x-ratelimit-remaining-requests"], "1");
  HttpResult second = client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"));
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.headers["x-ratelimit-remaining-requests"], "0");
  HttpResult third = client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"));
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(third.headers["x-ratelimit-remaining-requests"], "0");
  int64_t retry_after_ms = 0;
  ASSERT_TRUE(absl::SimpleAtoi(third.headers["retry-after-ms"], &retry_after_ms));
  EXPECT_GT(retry_after_ms, 50000);  // the 60 s window opened moments ago
  EXPECT_LE(retry_after_ms, 60000);
  int retry_after_s = 0;
  ASSERT_TRUE(absl::SimpleAtoi(third.headers["retry-after"], &retry_after_s));
  EXPECT_GE(retry_after_s, 50);
  EXPECT_LE(retry_after_s, 60);
  EXPECT_THAT(third.body, HasSubstr("rate_limit_exceeded"));
}

TEST_F(LlmSimIntegrationTest, FaultResetClosesTheConnectionWithoutAResponse) {
  SimProcess sim({"--fault-reset", "1"});
  ASSERT_GT(sim.port(), 0);
  Client client;
  HttpResult r = client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"));
  EXPECT_THAT(r.code, ::testing::AnyOf(CURLE_GOT_NOTHING, CURLE_RECV_ERROR, CURLE_SEND_ERROR))
      << curl_easy_strerror(r.code);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.body.empty());
  // The server itself is fine: non-chat endpoints still answer.
  Client other;
  EXPECT_EQ(other.Get(sim.Url("/healthz")).status, 200);
}

// The request limit flags (cli/http_limit_flags.h) reach every loop's listener: a body over
// --max-body-bytes is 413, a head with more than --max-headers lines 431, both in the OpenAI
// error shape; a head that has not arrived whole after --request-timeout is 408.
TEST_F(LlmSimIntegrationTest, HttpLimitFlagsBoundTheRequests) {
  SimProcess sim({"--max-body-bytes", "1000", "--max-headers", "4", "--request-timeout", "1s"});
  ASSERT_GT(sim.port(), 0);
  // libcurl sends Host, Accept, Content-Type and Content-Length: 4 lines.
  EXPECT_EQ(Client().Post(sim.Url("/v1/chat/completions"), GraderBody("x")).status, 200);
  HttpResult body = Client().Post(sim.Url("/v1/chat/completions"), std::string(1001, ' '));
  EXPECT_EQ(body.status, 413);
  EXPECT_EQ(body.body,
            R"j({"error":{"message":"request body is 1001 bytes, over the limit of 1000 bytes )j"
            R"j((max_body_bytes)","type":"invalid_request_error"}})j");
  HttpResult headers =
      Client().Post(sim.Url("/v1/chat/completions"), GraderBody("x"), "Bearer five-lines");
  EXPECT_EQ(headers.status, 431);
  EXPECT_EQ(headers.body,
            R"j({"error":{"message":"more than 4 request header lines (max_header_count)",)j"
            R"j("type":"invalid_request_error"}})j");

  const int fd = ::hb::testing::ConnectLoopback(sim.port());
  const std::string partial = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(write(fd, partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
  std::string answer;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) answer.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 408 "));
  EXPECT_THAT(answer, HasSubstr("request did not arrive whole within 1s"));
}

// On SIGTERM the watcher thread stops every loop while the main thread, once loop 0 has
// stopped, frees them: the loops must outlive the watcher's callback (a use-after-free that
// ASan and TSan report as a non-zero exit otherwise). Many loops widen the window.
TEST_F(LlmSimIntegrationTest, SigtermWithManyLoopsExitsCleanly) {
  for (int i = 0; i < 3; ++i) {
    SimProcess sim({"--threads", "16"});
    ASSERT_GT(sim.port(), 0);
    EXPECT_EQ(sim.Terminate(), 0);
  }
}

TEST_F(LlmSimIntegrationTest, FaultHangHoldsUntilTheClientGivesUp) {
  SimProcess sim({"--fault-hang", "1"});
  ASSERT_GT(sim.port(), 0);
  {
    Client client;
    HttpResult r = client.Post(sim.Url("/v1/chat/completions"), GraderBody("x"), "", 300);
    EXPECT_EQ(r.code, CURLE_OPERATION_TIMEDOUT);
  }  // closes the connection
  // The simulator notices the closed connection (it checks once a second) and releases it.
  Client probe;
  std::string metrics;
  ::hb::testing::PollUntil(
      [&] {
        metrics = probe.Get(sim.Url("/metrics")).body;
        return absl::StrContains(metrics, "hb_sim_in_flight 0\n");
      },
      absl::Seconds(10), absl::Milliseconds(50));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_in_flight 0\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_faults_total{kind=\"hang\"} 1\n"));
  EXPECT_EQ(sim.Terminate(), 0);
}

TEST_F(LlmSimIntegrationTest, ContentFaultsOverHttp) {
  SimProcess sim({"--fault-fenced", "1"});
  ASSERT_GT(sim.port(), 0);
  Client client;
  const std::string content = "fenced please";
  HttpResult r = client.Post(sim.Url("/v1/chat/completions"), GraderBody(content));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(ReplyContent(r.body),
            absl::StrCat("```json\n", SimulatedReplyContent(SimulatedVerdict(content)), "\n```"));
}

TEST_F(LlmSimIntegrationTest, LatencyDelaysWithoutBlockingOtherRequests) {
  SimProcess sim({"--latency-ms", "300", "--threads", "1"});
  ASSERT_GT(sim.port(), 0);
  // Eight concurrent 300 ms requests on one event loop finish together, not one after another.
  CURLM* multi = curl_multi_init();
  std::vector<CURL*> handles;
  std::vector<std::string> bodies(8);
  const std::string request = GraderBody("x");
  const std::string url = sim.Url("/v1/chat/completions");
  for (int i = 0; i < 8; ++i) {
    CURL* h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.c_str());
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &bodies[i]);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_multi_add_handle(multi, h);
    handles.push_back(h);
  }
  const absl::Time start = absl::Now();
  int running = 0;
  do {
    curl_multi_perform(multi, &running);
    if (running > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  } while (running > 0);
  const absl::Duration elapsed = absl::Now() - start;
  for (CURL* h : handles) {
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    EXPECT_EQ(status, 200);
    curl_multi_remove_handle(multi, h);
    curl_easy_cleanup(h);
  }
  curl_multi_cleanup(multi);
  EXPECT_GE(elapsed, absl::Milliseconds(300));
  EXPECT_LT(elapsed, absl::Milliseconds(8 * 300));  // would be >= 2.4 s if serialised
}

}  // namespace
}  // namespace hb
