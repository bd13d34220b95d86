// ORS conformance of the real OrsHttpServer on 127.0.0.1:0 over a FakeEnvironment, driven
// with raw sockets (so a test can read a stream event by event and hang up mid-call). Written
// from the reference server (ors/server.py, ors/_reconnect.py) and client (ors/client/).
#include "environment/http/ors_http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/retry/retry_status.h"
#include "environment/ors/ors_api.h"
#include "environment/trainer_protocols.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "rapidjson/document.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_environment.h"
#include "tests/testing/loopback.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::FakeEnvironment;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// One client connection. Reads block for at most 30 s (a guard against a hung test, never a
// synchronisation).
class Conn {
 public:
  explicit Conn(int port) : fd_(::hb::testing::ConnectLoopback(port)) {}
  ~Conn() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  // `headers`: extra header lines, each ending in "\r\n".
  void Send(const std::string& method, const std::string& path, const std::string& body,
            const std::string& sid = "", const std::string& headers = "") {
    std::string raw = absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                   "Connection: close\r\nContent-Type: application/json\r\n",
                                   "Content-Length: ", body.size(), "\r\n", headers);
    if (!sid.empty()) absl::StrAppend(&raw, "X-Session-ID: ", sid, "\r\n");
    absl::StrAppend(&raw, "\r\n", body);
    ASSERT_EQ(send(fd_, raw.data(), raw.size(), MSG_NOSIGNAL), static_cast<ssize_t>(raw.size()));
  }
  // Reads until `needle` has arrived (or EOF); returns everything read so far.
  const std::string& ReadUntil(absl::string_view needle) {
    while (!absl::StrContains(in_, needle) && ReadSome()) {
    }
    return in_;
  }
  const std::string& ReadAll() {
    while (ReadSome()) {
    }
    return in_;
  }

 private:
  bool ReadSome() {
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }
  int fd_;
  std::string in_;
};

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
};

Reply Parse(const std::string& raw) {
  Reply reply;
  const size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return reply;
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, head_end), "\r\n");
  std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &reply.status)) return reply;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::pair<std::string, std::string> kv = absl::StrSplit(lines[i], absl::MaxSplits(':', 1));
    reply.headers[absl::AsciiStrToLower(kv.first)] =
        std::string(absl::StripAsciiWhitespace(kv.second));
  }
  std::string rest = raw.substr(head_end + 4);
  if (reply.headers["transfer-encoding"] != "chunked") {
    reply.body = rest;
    return reply;
  }
  size_t at = 0;
  while (at < rest.size()) {
    const size_t eol = rest.find("\r\n", at);
    if (eol == std::string::npos) break;
    size_t size = 0;
    if (!absl::SimpleHexAtoi(rest.substr(at, eol - at), &size) || size == 0) break;
    reply.body += rest.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return reply;
}

struct Event {
  std::string name;
  std::string data;
};

// The events of an SSE body, parsed as the ORS client does (comments skipped, one leading
// space of a value stripped, data lines joined with "\n").
std::vector<Event> Events(const std::string& body) {
  std::vector<Event> events;
  Event current;
  std::vector<std::string> data;
  for (absl::string_view line : absl::StrSplit(body, "\r\n")) {
    if (line.empty()) {
      if (!current.name.empty()) {
        current.data = absl::StrJoin(data, "\n");
        events.push_back(current);
      }
      current = Event{};
      data.clear();
      continue;
    }
    if (absl::StartsWith(line, ":")) continue;
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    const absl::string_view value = absl::StripLeadingAsciiWhitespace(kv.second);
    if (kv.first == "event") current.name = std::string(value);
    if (kv.first == "data") data.emplace_back(value);
  }
  return events;
}

// The JSON result of a finished call stream: "chunk" data then "end" data, as the client joins.
std::string CallResult(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) {
    if (e.name == "chunk" || e.name == "end") out += e.data;
  }
  return out;
}

class OrsHttpServerTest : public ::testing::Test {
 protected:
  OrsHttpServerTest() {
    env_.AddTask("dev", {"p0", {"theme:a"}, "user: zero"});
    env_.AddTask("dev", {"p1", {"theme:b"}, "user: one \"q\"\nsecond line"});
    env_.AddTask("test", {"t0", {}, "user: t"});
  }

  void StartServer(OrsServerOptions options = {}) {
    options.listen = "127.0.0.1:0";
    auto server = OrsHttpServer::Start(env_, clock_, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  Reply Do(const std::string& method, const std::string& path, const std::string& body = "",
           const std::string& sid = "", const std::string& headers = "") {
    Conn conn(server_->port());
    conn.Send(method, path, body, sid, headers);
    return Parse(conn.ReadAll());
  }

  // `method` on `path` is 405 naming the one method the route serves (RFC 9110's Allow).
  void ExpectMethodNotAllowed(const std::string& method, const std::string& path,
                              const std::string& allow) {
    Reply r = Do(method, path);
    EXPECT_EQ(r.status, 405) << method << " " << path;
    EXPECT_EQ(r.body, R"({"detail":"Method Not Allowed"})");
    EXPECT_EQ(r.headers["allow"], allow) << method << " " << path;
  }

  // The FakeEnvironment's own result for (task, reply), straight from Submit.
  SubmitResult Expected(const std::string& task_id, const std::string& reply) {
    return *env_.SubmitAndWait(task_id, reply);
  }

  // A session id from /create_session (not created yet).
  std::string IssueSession() {
    const Reply created = Do("POST", "/create_session");
    const std::vector<Event> events = Events(created.body);
    EXPECT_THAT(events, SizeIs(2));
    if (events.size() != 2) return "";
    EXPECT_EQ(events[0].name, "task_id");
    EXPECT_EQ(events[1].name, "end");
    return events[0].data;
  }

  // A session for task `spec_id` via /create_session + /create, as the client opens one.
  std::string OpenSession(const std::string& prompt_id) {
    const std::string sid = IssueSession();
    const Reply create = Do("POST", "/create",
                            absl::StrCat(R"({"task_spec":{"prompt_id":")", prompt_id,
                                         R"(","tags":[]},"env_name":"healthbench"})"),
                            sid);
    EXPECT_EQ(create.status, 200) << create.body;
    EXPECT_EQ(create.body, absl::StrCat(R"({"sid":")", sid, R"("})"));
    return sid;
  }

  // Holds grading, posts an answer on a new connection and reads up to its task_id event.
  std::unique_ptr<Conn> StartHeldCall(const std::string& sid, const std::string& answer) {
    env_.HoldSubmissions(true);
    auto conn = std::make_unique<Conn>(server_->port());
    conn->Send("POST", "/healthbench/call", AnswerBody(answer), sid);
    conn->ReadUntil("event: task_id");
    conn->ReadUntil("\r\n\r\n\r\n");  // the end of the event (after the chunk's size line)
    return conn;
  }

  static std::string AnswerBody(const std::string& answer, const std::string& call_id = "") {
    std::string body = absl::StrCat(R"({"name":"answer","input":{"answer":")", answer, R"("})");
    if (!call_id.empty()) absl::StrAppend(&body, R"(,"task_id":")", call_id, R"(")");
    return body + "}";
  }

  FakeClock clock_;
  FakeEnvironment env_;
  std::unique_ptr<OrsHttpServer> server_;
};

TEST_F(OrsHttpServerTest, StatelessRoutes) {
  StartServer();
  Reply r = Do("GET", "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.body, R"({"status":"ok"})");
  EXPECT_EQ(Do("GET", "/list_environments").body, R"(["healthbench"])");
  EXPECT_EQ(Do("GET", "/healthbench/splits").body,
            R"([{"name":"dev","type":"validation"},{"name":"test","type":"test"}])");
  EXPECT_EQ(Do("GET", "/HealthBench/tools").body, OrsApi::Tools());
  EXPECT_EQ(Do("POST", "/healthbench/tasks", R"({"split":"test"})").body,
            R"({"tasks":[{"prompt_id":"t0","split":"test","tags":[]}],"env_name":"healthbench"})");
  EXPECT_EQ(Do("POST", "/healthbench/num_tasks", R"({"split":"dev"})").body, R"({"num_tasks":2})");
  EXPECT_EQ(Do("POST", "/healthbench/task", R"({"split":"dev","index":0})").body,
            R"({"task":{"prompt_id":"p0","split":"dev","tags":["theme:a"]}})");
  EXPECT_EQ(Do("POST", "/healthbench/task_range", R"({"split":"dev","start":1})").body,
            R"({"tasks":[{"prompt_id":"p1","split":"dev","tags":["theme:b"]}]})");
}

TEST_F(OrsHttpServerTest, RoutingErrors) {
  StartServer();
  Reply r = Do("GET", "/gsm8k/tools");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"unknown environment \"gsm8k\""})");
  r = Do("GET", "/healthbench/nothing");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"Not Found"})");
  ExpectMethodNotAllowed("POST", "/health", "GET");
  ExpectMethodNotAllowed("GET", "/healthbench/tasks", "POST");
  ExpectMethodNotAllowed("GET", "/create", "POST");
  ExpectMethodNotAllowed("POST", "/healthbench/splits", "GET");
}

TEST_F(OrsHttpServerTest, BadInputEachWithItsExactError) {
  OrsServerOptions options;
  options.max_body_bytes = 1000;
  StartServer(options);
  Reply r = Do("POST", "/healthbench/task", R"({"split":"nope","index":0})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"j({"detail":"Invalid split: \"nope\" (splits: dev, test)"})j");
  r = Do("POST", "/healthbench/task", R"({"split":"dev","index":2})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"Invalid index: 2 is outside split \"dev\" of 2 tasks"})");
  r = Do("POST", "/healthbench/num_tasks", R"({"split":)");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("malformed JSON request body at offset 9: Invalid value."));
  r = Do("POST", "/healthbench/num_tasks", std::string(1001, ' '));
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(
      r.body,
      R"j({"detail":"request body is 1001 bytes, over the limit of 1000 bytes (max_body_bytes)"})j");
  const std::string sid = IssueSession();
  r = Do("POST", "/create", R"({"task_spec":{"prompt_id":"zz"}})", sid);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"unknown task id 'zz'"})");
  r = Do("POST", "/create", R"({"split":"dev","index":5})", sid);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"Invalid index: 5 is outside split \"dev\" of 2 tasks"})");
  for (const char* path : {"/ping", "/create", "/delete", "/delete_session"}) {
    r = Do("POST", path, "{}");
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_EQ(r.body, R"({"detail":"X-Session-ID header is required"})") << path;
  }
  r = Do("GET", "/healthbench/prompt");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"X-Session-ID header is required"})");
  r = Do("POST", "/healthbench/call", AnswerBody("x"), "no-such-session");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"Active environment not found"})");
}

TEST_F(OrsHttpServerTest, SessionLifecycle) {
  StartServer();
  const std::string sid = OpenSession("p1");
  EXPECT_EQ(Do("POST", "/ping", "", sid).body, R"({"status":"ok"})");
  Reply r = Do("GET", "/healthbench/prompt", "", sid);
  EXPECT_EQ(r.status, 200);
  rapidjson::Document prompt;
  prompt.Parse(r.body.c_str());
  ASSERT_TRUE(prompt.IsArray() && prompt.Size() == 1) << r.body;
  EXPECT_STREQ(prompt[0]["type"].GetString(), "text");
  EXPECT_STREQ(prompt[0]["text"].GetString(), "user: one \"q\"\nsecond line");
  EXPECT_EQ(Do("GET", "/healthbench/task_tools", "", sid).body, OrsApi::Tools());
  r = Do("POST", "/create", R"({"split":"dev","index":0})", sid);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"Session already exists"})");
  EXPECT_EQ(Do("POST", "/delete", "", sid).body, absl::StrCat(R"({"sid":")", sid, R"("})"));
  r = Do("POST", "/ping", "", sid);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"Active environment not found"})");
  EXPECT_EQ(Do("POST", "/delete_session", "", sid).body, absl::StrCat(R"({"sid":")", sid, R"("})"));
  // By split and index.
  const std::string s2 = IssueSession();
  r = Do("POST", "/create", R"({"split":"test","index":-1})", s2);
  EXPECT_EQ(r.body, absl::StrCat(R"({"sid":")", s2, R"("})"));
  EXPECT_THAT(Do("GET", "/healthbench/prompt", "", s2).body, HasSubstr("user: t"));
}

TEST_F(OrsHttpServerTest, SessionIdsAreTheServersAndBounded) {
  StartServer();
  const std::string create = R"({"split":"dev","index":0})";
  Reply r = Do("POST", "/create", create, "made-up-id");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body,
            "{\"detail\":\"unknown session id: use the id POST /create_session returned (it "
            "expires when unused for the session idle timeout)\"}");
  // A 64 KB id does not even reach the router (the head is over its limit); a 1000-byte one
  // is refused by name.
  r = Do("POST", "/create", create, std::string(64 << 10, 'a'));
  EXPECT_EQ(r.status, 431);
  r = Do("POST", "/create", create, std::string(1000, 'a'));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body,
            "{\"detail\":\"X-Session-ID must be 1 to 64 characters of A-Z a-z 0-9 - _ (got "
            "1000 bytes); use the id POST /create_session returned\"}");
  r = Do("GET", "/healthbench/prompt", "", "../etc");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("(got 6 bytes)"));
  r = Do("POST", "/delete", "", "never-issued");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"detail":"Active environment not found"})");
  // An issued id that was forgotten cannot be created any more.
  const std::string sid = IssueSession();
  EXPECT_EQ(Do("POST", "/delete_session", "", sid).status, 200);
  EXPECT_EQ(Do("POST", "/create", create, sid).status, 404);
}

TEST_F(OrsHttpServerTest, OneAnswerPerEpisodeAndResultsStayInTheirSession) {
  StartServer();
  const std::string sid = OpenSession("p0");
  const std::vector<Event> first =
      Events(Do("POST", "/healthbench/call", AnswerBody("a"), sid).body);
  ASSERT_THAT(first, SizeIs(2));
  EXPECT_THAT(first[1].data, HasSubstr("\"finished\":true"));
  const std::string call_id = first[0].data;
  // A second answer in the finished episode: refused, the judge never sees it.
  Reply r = Do("POST", "/healthbench/call", AnswerBody("b"), sid);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, absl::StrCat("{\"detail\":\"episode already finished: this session's "
                                 "answer was graded (task_id ",
                                 call_id,
                                 "); reconnect with that task_id to read its result, or create "
                                 "a new session\"}"));
  EXPECT_THAT(env_.replies(), ElementsAre("a"));
  // Its result stays readable by its session, and only by it.
  EXPECT_THAT(Events(Do("POST", "/healthbench/call", AnswerBody("", call_id), sid).body),
              SizeIs(2));
  const std::string other = OpenSession("p1");
  r = Do("POST", "/healthbench/call", AnswerBody("", call_id), other);
  EXPECT_EQ(r.body, "event: error\r\ndata: unknown task_id\r\n\r\n");
}

TEST_F(OrsHttpServerTest, ASecondAnswerWhileTheFirstIsGradedIsRefused) {
  StartServer();
  const std::string sid = OpenSession("p0");
  std::unique_ptr<Conn> held = StartHeldCall(sid, "first");
  Reply r = Do("POST", "/healthbench/call", AnswerBody("second"), sid);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("an answer is already being graded in this session"));
  env_.HoldSubmissions(false);
  EXPECT_THAT(held->ReadAll(), HasSubstr("event: end"));
  EXPECT_THAT(env_.replies(), ElementsAre("first"));
}

TEST_F(OrsHttpServerTest, CallAnswerStreamsTheGradedResult) {
  StartServer();
  const std::string sid = OpenSession("p0");
  Reply r = Do("POST", "/healthbench/call", AnswerBody(""), sid);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/event-stream");
  const std::vector<Event> events = Events(r.body);
  ASSERT_THAT(events, SizeIs(2));
  EXPECT_EQ(events[0].name, "task_id");
  EXPECT_EQ(events[1].name, "end");
  rapidjson::Document result;
  result.Parse(events[1].data.c_str());
  ASSERT_TRUE(result.IsObject()) << events[1].data;
  EXPECT_TRUE(result["ok"].GetBool());
  const auto& output = result["output"];
  // The empty reply is graded: the fake scores it -1 (unclipped).
  EXPECT_EQ(output["reward"].GetDouble(), -1.0);
  EXPECT_TRUE(output["finished"].GetBool());
  EXPECT_EQ(output["metadata"]["reward_clipped"].GetDouble(), 0.0);
  EXPECT_EQ(output["metadata"]["points_met"].GetDouble(), -2.0);
  EXPECT_EQ(output["metadata"]["points_possible"].GetDouble(), 2.0);
  EXPECT_EQ(output["metadata"]["items"].Size(), 2u);
  EXPECT_STREQ(output["blocks"][0]["text"].GetString(),
               "Graded: reward -1.0 (-2.0 of 2.0 points; 1 of 2 rubric items met).");
  EXPECT_THAT(env_.replies(), ElementsAre(""));
}

TEST_F(OrsHttpServerTest, LargeResultIsChunkedLikeTheReference) {
  SubmitResult big;
  big.reward = 0.25;
  big.points_possible = 4;
  big.points_met = 1;
  for (int i = 0; i < 40; ++i) {
    big.items.push_back({absl::StrCat("criterion ", i, " ", std::string(300, 'x'), " \xC3\xA9"), 1,
                         i % 2 == 0, std::string(200, ' ') + "why"});
  }
  env_.SetResultFn([big](const std::string&, const std::string&) { return big; });
  StartServer();
  const std::string sid = OpenSession("p0");
  const std::vector<Event> events =
      Events(Do("POST", "/healthbench/call", AnswerBody("hello"), sid).body);
  const std::string expected = OrsApi::RunToolOutput(big);
  ASSERT_GT(expected.size(), 5 * 4096u);
  ASSERT_GE(events.size(), 7u);
  EXPECT_EQ(events.front().name, "task_id");
  for (size_t i = 1; i + 1 < events.size(); ++i) {
    EXPECT_EQ(events[i].name, "chunk");
    EXPECT_LE(events[i].data.size(), 4096u);
  }
  EXPECT_EQ(events.back().name, "end");
  EXPECT_EQ(CallResult(events), expected);
}

TEST_F(OrsHttpServerTest, ReconnectByCallIdNeitherRepeatsNorLosesTheCall) {
  StartServer();
  const std::string sid = OpenSession("p0");
  std::unique_ptr<Conn> first = StartHeldCall(sid, "abcd");
  const std::vector<Event> started = Events(Parse(first->ReadUntil("")).body);
  ASSERT_THAT(started, SizeIs(1));
  const std::string call_id = started[0].data;
  // A second stream on the same call, then the first client hangs up mid-call.
  Conn second(server_->port());
  second.Send("POST", "/healthbench/call", AnswerBody("ignored", call_id), sid);
  second.ReadUntil("event: task_id");
  first->Close();
  env_.HoldSubmissions(false);
  const std::vector<Event> second_events = Events(Parse(second.ReadAll()).body);
  ASSERT_THAT(second_events, SizeIs(2));
  EXPECT_EQ(second_events[0].data, call_id);
  EXPECT_EQ(second_events[1].name, "end");
  // After the result: a reconnect reads the same result again.
  const std::vector<Event> again =
      Events(Do("POST", "/healthbench/call", AnswerBody("ignored", call_id), sid).body);
  ASSERT_THAT(again, SizeIs(2));
  EXPECT_EQ(again[0].data, call_id);
  EXPECT_EQ(again[1].data, second_events[1].data);
  EXPECT_THAT(env_.replies(), ElementsAre("abcd"));
  // An unknown call id is one "error" event, as the reference.
  const Reply unknown = Do("POST", "/healthbench/call", AnswerBody("x", "nope"), sid);
  EXPECT_EQ(unknown.status, 200);
  EXPECT_EQ(unknown.body, "event: error\r\ndata: unknown task_id\r\n\r\n");
}

TEST_F(OrsHttpServerTest, PingsWhileGrading) {
  OrsServerOptions options;
  options.ping_interval = absl::Milliseconds(1);
  StartServer(options);
  const std::string sid = OpenSession("p0");
  std::unique_ptr<Conn> conn = StartHeldCall(sid, "ab");
  EXPECT_THAT(conn->ReadUntil(": ping\r\n\r\n"), HasSubstr(": ping\r\n\r\n"));
  env_.HoldSubmissions(false);
  const std::vector<Event> events = Events(Parse(conn->ReadAll()).body);
  ASSERT_THAT(events, SizeIs(2));
  EXPECT_EQ(events[1].name, "end");
}

TEST_F(OrsHttpServerTest, ToolErrorsAreInBandResults) {
  StartServer();
  const std::string sid = OpenSession("p0");
  std::vector<Event> events =
      Events(Do("POST", "/healthbench/call", R"({"name":"search","input":{}})", sid).body);
  EXPECT_EQ(
      CallResult(events),
      R"json({"ok":false,"error":"'search' is not a valid tool (available tools: answer)"})json");
  events = Events(
      Do("POST", "/healthbench/call", R"({"name":"answer","input":{"answer":1}})", sid).body);
  EXPECT_EQ(
      CallResult(events),
      R"({"ok":false,"error":"Tool input validation error: input field 'answer' must be a string"})");
  env_.SetResultFn([](const std::string&, const std::string&) -> absl::StatusOr<SubmitResult> {
    return absl::UnavailableError("judge unreachable");
  });
  events = Events(Do("POST", "/healthbench/call", AnswerBody("x"), sid).body);
  EXPECT_EQ(CallResult(events), R"({"ok":false,"error":"UNAVAILABLE: judge unreachable"})");
  const Reply bad = Do("POST", "/healthbench/call", R"({"name":"answer",)", sid);
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(
      bad.body,
      HasSubstr("malformed JSON request body at offset 17: Missing a name for object member."));
}

TEST_F(OrsHttpServerTest, UpFrontRejectionsAreHttpStatuses) {
  StartServer();
  const std::string sid = OpenSession("p0");
  env_.set_max_reply_bytes(10);
  Reply r = Do("POST", "/healthbench/call", AnswerBody(std::string(11, 'a')), sid);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"reply is 11 bytes, over the limit of 10 bytes"})");
  absl::Status backlog = absl::ResourceExhaustedError("backlog full");
  SetRetryDelay(backlog, absl::Seconds(2));
  env_.RejectUpFront(backlog);
  r = Do("POST", "/healthbench/call", AnswerBody("a"), sid);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "2");
  EXPECT_THAT(r.body, HasSubstr("backlog full"));
  env_.RejectUpFront(absl::UnavailableError("shutting down"));
  EXPECT_EQ(Do("POST", "/healthbench/call", AnswerBody("a"), sid).status, 503);
  EXPECT_EQ(env_.submissions(), 0);
}

TEST_F(OrsHttpServerTest, ReapsIdleSessionsByTheInjectedClock) {
  OrsServerOptions options;
  options.session_idle_timeout = absl::Minutes(15);
  StartServer(options);
  const std::string idle = OpenSession("p0");
  const std::string active = OpenSession("p1");
  clock_.Advance(absl::Minutes(10));
  EXPECT_EQ(Do("POST", "/ping", "", active).status, 200);
  clock_.Advance(absl::Minutes(5));
  server_->ReapNow();
  EXPECT_EQ(Do("POST", "/ping", "", idle).status, 200);  // exactly 15 min idle: kept
  clock_.Advance(absl::Minutes(15) + absl::Nanoseconds(1));
  EXPECT_EQ(Do("POST", "/ping", "", active).status, 200);
  clock_.Advance(absl::Minutes(15) + absl::Nanoseconds(1));
  server_->ReapNow();
  EXPECT_EQ(Do("GET", "/healthbench/prompt", "", idle).status, 404);
  EXPECT_EQ(Do("GET", "/healthbench/prompt", "", active).status, 404);
}

TEST_F(OrsHttpServerTest, ManyOpenCallsShareOneLoopThread) {
  StartServer();
  constexpr int kCalls = 200;
  std::vector<std::string> sids;  // one episode each: a session grades one answer at a time
  for (int i = 0; i < kCalls; ++i) sids.push_back(OpenSession("p0"));
  env_.HoldSubmissions(true);
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < kCalls; ++i) {
    conns.push_back(std::make_unique<Conn>(server_->port()));
    conns.back()->Send("POST", "/healthbench/call", AnswerBody(std::to_string(i)), sids[i]);
  }
  EXPECT_TRUE(env_.WaitForSubmissions(kCalls)) << env_.submissions() << " submitted";
  env_.HoldSubmissions(false);
  for (auto& conn : conns) {
    const std::vector<Event> events = Events(Parse(conn->ReadAll()).body);
    ASSERT_THAT(events, SizeIs(2));
    EXPECT_EQ(events[1].name, "end");
  }
  EXPECT_EQ(env_.submissions(), kCalls);
}

TEST_F(OrsHttpServerTest, RefusesAPortInUseAndBadOptions) {
  StartServer();
  OrsServerOptions options;
  options.listen = absl::StrCat("127.0.0.1:", server_->port());
  EXPECT_THAT(OrsHttpServer::Start(env_, clock_, options),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr(absl::StrCat("cannot listen on 127.0.0.1:", server_->port()))));
  options.listen = "127.0.0.1:0";
  options.io_timeout = options.ping_interval;
  EXPECT_THAT(OrsHttpServer::Start(env_, clock_, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "io_timeout (10s) must exceed ping_interval (10s): an open call stream "
                       "is kept alive by its pings"));
  options.io_timeout = absl::Seconds(60);
  options.listen = "nonsense";
  EXPECT_THAT(OrsHttpServer::Start(env_, clock_, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("host:port")));
}

TEST_F(OrsHttpServerTest, ShutdownEndsOpenStreamsAndDropsLateResults) {
  StartServer();
  const std::string sid = OpenSession("p0");
  std::unique_ptr<Conn> conn = StartHeldCall(sid, "a");
  server_->Shutdown();
  EXPECT_THAT(conn->ReadAll(), ::testing::Not(HasSubstr("event: end")));
  env_.HoldSubmissions(false);  // the late result finds no server and is dropped
  server_->Shutdown();          // idempotent
}

// --- Trainer routes (OpenRLHF, slime, NeMo-Gym) --------------------------------------------

// The Prometheus text of `registry`.
std::string MetricsText(prometheus::Registry& registry) {
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, registry.Collect());
  return text.str();
}

constexpr char kNemoVerify[] =
    R"({"prompt_id":"p0","_ng_task_index":3,"responses_create_params":{"input":[{"role":"user",)"
    R"("content":"zero","type":"message"}]},"response":{"id":"r","object":"response","output":[)"
    R"({"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[)"
    R"({"type":"output_text","text":"abcd<|eot_id|>","annotations":[]}]}]}})";

TEST_F(OrsHttpServerTest, TrainerRoutesAnswerEachTrainersShape) {
  StartServer();
  Reply r = Do("POST", "/get_reward",
               R"({"query":["<s>Q0 ab<|im_end|>","Q1 c</s>"],"prompts":["<s>Q0 ","Q1 "],)"
               R"("labels":["p0","p1"]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  EXPECT_EQ(r.body, FormatOpenRlhfAnswer({Expected("p0", "ab"), Expected("p1", "c")}));
  // OpenRLHF posts an empty batch to every URL but the first.
  r = Do("POST", "/get_reward", R"({"query":[],"prompts":[],"labels":[]})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, FormatOpenRlhfAnswer({}));
  r = Do(
      "POST", "/reward",
      R"({"prompt":[{"role":"user","content":"one"}],"response":"xyz<|endoftext|>","label":"p1"})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, FormatSlimeAnswer(Expected("p1", "xyz")));
  auto verify = ParseNemoGymVerify(kNemoVerify, TrainerProtocolOptions{});
  ASSERT_TRUE(verify.ok()) << verify.status();
  for (const char* path : {"/verify", "/ng-rollout/rollout-7.a_b/verify"}) {
    r = Do("POST", path, kNemoVerify);
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    EXPECT_EQ(r.body, FormatNemoGymVerifyAnswer(*verify, Expected("p0", "abcd"))) << path;
  }
  for (const char* path : {"/seed_session", "/ng-rollout/r1/seed_session"}) {
    r = Do("POST", path, kNemoVerify);
    EXPECT_EQ(r.status, 200) << path;
    EXPECT_EQ(r.body, "{}") << path;
  }
  r = Do("GET", "/reverify_mode");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"("stateless")");
  const std::string aggregate =
      R"({"verify_responses":[{"_ng_task_index":0,"reward":0.5,"reward_clipped":0.5},)"
      R"({"_ng_task_index":1,"reward":-0.5,"reward_clipped":0.0}]})";
  r = Do("POST", "/ng-rollout/r1/aggregate_metrics", aggregate);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, *NemoGymAggregateMetrics(aggregate));
  // The replies graded: stripped of the prompt prefix and of the end-of-turn tokens (each
  // Expected() call above grades once more).
  EXPECT_THAT(env_.replies(), ::testing::IsSupersetOf({"ab", "c", "xyz", "abcd"}));
  EXPECT_THAT(env_.replies(), ::testing::Each(::testing::Not(HasSubstr("<"))));
}

TEST_F(OrsHttpServerTest, TrainerRoutesStripTheConfiguredSuffixes) {
  OrsServerOptions options;
  options.trainer.strip_suffixes = {"<END>"};
  StartServer(options);
  EXPECT_EQ(Do("POST", "/reward", R"({"response":"ab<END><END>","label":"p0"})").status, 200);
  EXPECT_EQ(Do("POST", "/reward", R"({"response":"ab<|im_end|>","label":"p0"})").status, 200);
  EXPECT_THAT(env_.replies(), ElementsAre("ab", "ab<|im_end|>"));
}

TEST_F(OrsHttpServerTest, TrainerRouteErrorsMapToHttpStatuses) {
  StartServer();
  Reply r = Do("POST", "/get_reward", R"({"query":["a"],"prompts":[""],"labels":["zz"]})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"j({"detail":"labels[0] (task \"zz\"): NOT_FOUND: unknown task id 'zz'"})j");
  r = Do("POST", "/reward", R"({"response":"a","label":"zz"})");
  EXPECT_EQ(r.status, 404);
  r = Do("POST", "/verify", R"({"prompt_id":"zz","response":{"output":[]}})");
  EXPECT_EQ(r.status, 404);
  r = Do("POST", "/get_reward", R"({"query":["a"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"detail":"request body: field 'prompts' must be an array of strings"})");
  ExpectMethodNotAllowed("GET", "/get_reward", "POST");
  ExpectMethodNotAllowed("POST", "/reverify_mode", "GET");
  // The prefix is NeMo-Gym's: only its routes take it, and it needs a rollout id.
  EXPECT_EQ(Do("POST", "/ng-rollout/r1/get_reward", "{}").status, 404);
  EXPECT_EQ(Do("POST", "/ng-rollout//verify", kNemoVerify).status, 404);
  EXPECT_EQ(Do("POST", "/ng-rollout/r1", kNemoVerify).status, 404);

  absl::Status backlog = absl::ResourceExhaustedError("backlog full");
  SetRetryDelay(backlog, absl::Seconds(3));
  env_.RejectUpFront(backlog);
  r = Do("POST", "/reward", R"({"response":"a","label":"p0"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.headers["retry-after"], "3");
  EXPECT_THAT(r.body, HasSubstr("label (task \\\"p0\\\"): RESOURCE_EXHAUSTED: backlog full"));
  EXPECT_EQ(Do("POST", "/get_reward", R"({"query":["a"],"prompts":[""],"labels":["p0"]})").status,
            429);
  env_.RejectUpFront(absl::OkStatus());
  EXPECT_EQ(env_.submissions(), 0);
}

TEST_F(OrsHttpServerTest, AReplyThatCouldNotBeGradedIsNeverAReward) {
  StartServer();
  env_.SetResultFn([](const std::string& id, const std::string&) -> absl::StatusOr<SubmitResult> {
    if (id == "p1") return absl::DeadlineExceededError("judge timed out");
    return absl::FailedPreconditionError("judge reply unparseable");
  });
  Reply r =
      Do("POST", "/get_reward", R"({"query":["a","b"],"prompts":["",""],"labels":["p0","p1"]})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(
      r.body,
      R"j({"detail":"labels[0] (task \"p0\") could not be graded: FAILED_PRECONDITION: judge reply unparseable"})j");
  r = Do("POST", "/reward", R"({"response":"a","label":"p1"})");
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(
      r.body,
      R"j({"detail":"label (task \"p1\") could not be graded: DEADLINE_EXCEEDED: judge timed out"})j");
  // NeMo-Gym's own marker: HTTP 200, reward 0.0 and _ng_failure_class, so its collection sets
  // the row aside instead of training on it.
  auto verify = ParseNemoGymVerify(kNemoVerify, TrainerProtocolOptions{});
  ASSERT_TRUE(verify.ok());
  r = Do("POST", "/verify", kNemoVerify);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, FormatNemoGymJudgeFailure(
                        *verify, absl::FailedPreconditionError("judge reply unparseable")));
  EXPECT_THAT(r.body, HasSubstr(R"("_ng_failure_class":"judge_failed")"));
}

TEST_F(OrsHttpServerTest, TrainerRoutesNeedATokenAsBearerOrAsTheBasicAuthPassword) {
  constexpr char kToken[] = "0123456789abcdef0123456789abcdef";
  prometheus::Registry registry;
  EnvMetrics metrics(registry);
  OrsServerOptions options;
  auto tokens = BearerTokens::FromList({kToken});
  ASSERT_TRUE(tokens.ok());
  options.tokens = *tokens;
  options.metrics = &metrics;
  StartServer(options);
  const std::string body = R"({"response":"a","label":"p0"})";
  for (const char* path : {"/get_reward", "/reward", "/seed_session", "/verify",
                           "/aggregate_metrics", "/ng-rollout/r1/verify"}) {
    const Reply r = Do("POST", path, body);
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_THAT(r.body, HasSubstr(R"({"detail":"missing credentials: send `authorization: Bearer)"))
        << path;
    EXPECT_THAT(r.body, HasSubstr("or HTTP Basic auth with the token as password")) << path;
  }
  EXPECT_EQ(Do("GET", "/reverify_mode").status, 401);
  // base64("hb:" + kToken), as aiohttp sends for http://hb:<token>@host/ (and curl, requests).
  const std::string basic =
      "Authorization: Basic aGI6MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\r\n";
  EXPECT_EQ(Do("POST", "/reward", body, "", basic).status, 200);
  EXPECT_EQ(Do("POST", "/reward", body, "", absl::StrCat("Authorization: Bearer ", kToken, "\r\n"))
                .status,
            200);
  // base64("hb:wrong-token-wrong-token")
  const Reply wrong = Do("POST", "/reward", body, "",
                         "Authorization: Basic aGI6d3JvbmctdG9rZW4td3JvbmctdG9rZW4=\r\n");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.body, R"({"detail":"the Basic auth password is not accepted by this server"})");
  EXPECT_EQ(env_.submissions(), 2);
  // Refusals count per route (the prefixed /verify as "verify").
  EXPECT_THAT(
      MetricsText(registry),
      ::testing::AllOf(HasSubstr(R"(hb_env_trainer_requests_total{code="401",route="reward"} 2)"),
                       HasSubstr(R"(hb_env_trainer_requests_total{code="401",route="verify"} 2)"),
                       HasSubstr(R"(hb_env_trainer_requests_total{code="200",route="reward"} 2)")));
}

TEST_F(OrsHttpServerTest, TrainerRoutesCountRequestsByRouteAndCode) {
  prometheus::Registry registry;
  EnvMetrics metrics(registry);
  OrsServerOptions options;
  options.metrics = &metrics;
  StartServer(options);
  EXPECT_EQ(Do("POST", "/get_reward", R"({"query":["a"],"prompts":[""],"labels":["p0"]})").status,
            200);
  EXPECT_EQ(Do("POST", "/reward", R"({"response":"a","label":"zz"})").status, 404);
  EXPECT_EQ(Do("POST", "/ng-rollout/r1/verify", kNemoVerify).status, 200);
  EXPECT_THAT(MetricsText(registry),
              ::testing::AllOf(
                  HasSubstr(R"(hb_env_trainer_requests_total{code="200",route="get_reward"} 1)"),
                  HasSubstr(R"(hb_env_trainer_requests_total{code="404",route="reward"} 1)"),
                  HasSubstr(R"(hb_env_trainer_requests_total{code="200",route="verify"} 1)"),
                  HasSubstr(R"(hb_env_trainer_request_seconds_count{route="verify"} 1)"),
                  HasSubstr(R"(hb_env_trainer_reward_count{route="get_reward"} 1)")));
}

TEST_F(OrsHttpServerTest, ATrainerClientThatHangsUpOrAShutdownWhileGradingIsHarmless) {
  StartServer();
  env_.HoldSubmissions(true);
  {
    Conn gone(server_->port());
    gone.Send("POST", "/reward", R"({"response":"a","label":"p0"})");
    EXPECT_TRUE(env_.WaitForSubmissions(1)) << env_.submissions() << " submitted";
  }  // closed while its reply is graded
  env_.HoldSubmissions(false);
  // The late answer found its request detached (libevent frees it); the server serves on.
  const Reply r = Do("POST", "/reward", R"({"response":"ab","label":"p0"})");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, FormatSlimeAnswer(Expected("p0", "ab")));
  env_.HoldSubmissions(true);
  Conn pending(server_->port());
  pending.Send("POST", "/get_reward", R"({"query":["a"],"prompts":[""],"labels":["p0"]})");
  EXPECT_TRUE(env_.WaitForSubmissions(4)) << env_.submissions() << " submitted";
  server_->Shutdown();
  EXPECT_THAT(pending.ReadAll(), ::testing::Not(HasSubstr("200")));
  env_.HoldSubmissions(false);  // the late result finds no server and is dropped
}

}  // namespace
}  // namespace hb::env
