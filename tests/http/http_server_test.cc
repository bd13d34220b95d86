// HttpRouteTable without sockets (matching, 404/405, the gate) and HttpServer on 127.0.0.1:0
// (several loops, the bounded reading, the one writer, bind errors).
#include "http/http_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback.h"
#include "tests/testing/recording_http_exchange.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::RecordingHttpExchange;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A handler that answers 200 with its name and the matched params.
HttpHandler Named(const std::string& name) {
  return [name](const HttpServerRequest& request, HttpExchange& exchange) {
    std::string body = name;
    for (absl::string_view param : request.params) body += absl::StrCat(" ", param);
    exchange.Reply(200, {{"Content-Type", "text/plain"}}, body);
  };
}

HttpRouteTable SampleTable() {
  HttpRouteTable table;
  table.Add({"GET", "/health", Named("health")});
  table.Add({"POST", "/create", Named("create")});
  table.Add({"POST", "/*/tasks", Named("tasks")});
  table.Add({"GET", "/ng/*/mode", Named("mode")});
  table.Add({"*", "/any/", Named("prefix"), /*prefix=*/true});
  return table;
}

std::vector<testing::RecordedHttpReply> Drive(const HttpRouteTable& table, absl::string_view method,
                                              absl::string_view path) {
  HttpServerRequest request;
  request.method = method;
  request.path = path;
  RecordingHttpExchange exchange;
  table.Dispatch(request, exchange);
  return exchange.replies();
}

TEST(HttpRouteTableTest, ExactWildcardAndPrefixRowsRunTheirHandler) {
  const HttpRouteTable table = SampleTable();
  EXPECT_EQ(Drive(table, "GET", "/health").at(0).body, "health");
  EXPECT_EQ(Drive(table, "POST", "/healthbench/tasks").at(0).body, "tasks healthbench");
  EXPECT_EQ(Drive(table, "GET", "/ng/r1/mode").at(0).body, "mode r1");
  EXPECT_EQ(Drive(table, "DELETE", "/any/thing/else").at(0).body, "prefix");
}

TEST(HttpRouteTableTest, AWildcardIsOneNonEmptySegment) {
  const HttpRouteTable table = SampleTable();
  for (absl::string_view path : {"//tasks", "/a/b/tasks", "/tasks", "/x/tasks/", "/ng//mode"}) {
    const auto replies = Drive(table, "POST", path);
    ASSERT_EQ(replies.size(), 1u) << path;
    EXPECT_EQ(replies[0].status, 404) << path;
    EXPECT_EQ(replies[0].body, R"({"detail":"Not Found"})") << path;
    EXPECT_EQ(replies[0].Header("Content-Type"), "application/json");
  }
}

TEST(HttpRouteTableTest, AKnownPathWithAnotherMethodIs405NamingTheAllowedOnes) {
  HttpRouteTable table = SampleTable();
  table.Add({"DELETE", "/health", Named("health-delete")});
  const auto replies = Drive(table, "POST", "/health");
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 405);
  EXPECT_EQ(replies[0].Header("Allow"), "GET, DELETE");
  EXPECT_EQ(replies[0].body, R"({"detail":"Method Not Allowed"})");
  EXPECT_EQ(Drive(table, "HEAD", "/x/tasks").at(0).Header("Allow"), "POST");
}

TEST(HttpRouteTableTest, TheFirstMatchingRowWinsAndErrorBodiesAreTheTables) {
  HttpRouteTable table([](int status, absl::string_view message) {
    return absl::StrCat("{\"error\":{\"code\":", status, ",\"message\":\"", message, "\"}}");
  });
  table.Add({"GET", "/a", Named("first")});
  table.Add({"GET", "/a", Named("second")});
  EXPECT_EQ(Drive(table, "GET", "/a").at(0).body, "first");
  EXPECT_EQ(Drive(table, "GET", "/b").at(0).body,
            R"({"error":{"code":404,"message":"Not Found"}})");
}

TEST(HttpRouteTableTest, TheGateSeesTheRowOfThePathAndMayAnswerFirst) {
  HttpRouteTable table = SampleTable();
  std::vector<std::string> seen;
  table.SetGate(
      [&seen](const HttpServerRequest& request, HttpExchange& exchange, const HttpRoute* route) {
        seen.push_back(route == nullptr ? "none" : route->path);
        if (request.Header("x-token") == "ok") return true;
        exchange.Reply(401, {}, "refused");
        return false;
      });
  HttpServerRequest request;
  request.method = "POST";  // the row's path matches even with another method
  request.path = "/health";
  RecordingHttpExchange refused;
  table.Dispatch(request, refused);
  ASSERT_EQ(refused.replies().size(), 1u);
  EXPECT_EQ(refused.replies()[0].status, 401);

  request.headers = {{"X-Token", "ok"}};
  request.path = "/nowhere";
  RecordingHttpExchange admitted;
  table.Dispatch(request, admitted);
  EXPECT_EQ(admitted.replies().at(0).status, 404);
  EXPECT_THAT(seen, ElementsAre("/health", "none"));
}

std::string Exchange(int port, const std::string& request) {
  const int fd = ::hb::testing::ConnectLoopback(port);
  EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(request.size()));
  std::string in;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) in.append(buf, static_cast<size_t>(n));
  close(fd);
  return in;
}

TEST(HttpServerTest, ServesTheTableOnEveryLoopWithBoundedReading) {
  HttpRouteTable table;
  table.Add(
      {"POST", "/echo", [](const HttpServerRequest& request, HttpExchange& exchange) {
         exchange.Reply(201, {{"X-Seen", std::string(request.Header("x-probe"))}}, request.body);
       }});
  HttpServerOptions options;
  options.threads = 2;
  options.limits.max_body_bytes = 16;
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HttpServer> server, HttpServer::Bind(options, &table));
  ASSERT_GT(server->port(), 0);
  server->Start();
  for (int i = 0; i < 4; ++i) {
    const std::string reply =
        Exchange(server->port(),
                 "POST /echo HTTP/1.1\r\nHost: x\r\nX-Probe: p\r\nContent-Length: 5\r\n"
                 "Connection: close\r\n\r\nhello");
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 201 "));
    EXPECT_THAT(reply, HasSubstr("X-Seen: p\r\n"));
    EXPECT_THAT(reply, HasSubstr("\r\n\r\nhello"));
  }
  EXPECT_THAT(
      Exchange(server->port(), "GET /none HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      HasSubstr(R"({"detail":"Not Found"})"));
  const std::string big =
      Exchange(server->port(), "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n");
  EXPECT_THAT(big, StartsWith("HTTP/1.1 413 "));
  EXPECT_THAT(big, HasSubstr("over the limit of 16 bytes"));
  server->Stop();
  server->Wait();
}

TEST(HttpServerTest, BindErrorsNameTheAddress) {
  HttpRouteTable table;
  HttpServerOptions options;
  options.listen = "nocolon";
  options.listen_name = "--listen";
  EXPECT_THAT(HttpServer::Bind(options, &table),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--listen must be host:port, got 'nocolon'")));
  options.listen = "127.0.0.1:0";
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<HttpServer> taken, HttpServer::Bind(options, &table));
  options.listen = absl::StrCat("127.0.0.1:", taken->port());
  EXPECT_THAT(HttpServer::Bind(options, &table),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr(absl::StrCat("cannot listen on 127.0.0.1:", taken->port(),
                                              ": Address already in use"))));
}

}  // namespace
}  // namespace hb
