// BoundedEvhttp against hostile clients on 127.0.0.1 (a real evhttp server on its own loop
// thread, raw sockets), and HttpRequestFramer on its own.
#include "http/bounded_evhttp.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback.h"

namespace hb {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// An evhttp server answering every request 200 with its body length.
class Server {
 public:
  explicit Server(HttpServerLimits limits) {
    evthread_use_pthreads();
    base_ = event_base_new();
    http_ = evhttp_new(base_);
    bounded_ = std::make_unique<BoundedEvhttp>(http_, limits);
    evhttp_set_gencb(
        http_,
        [](evhttp_request* req, void*) {
          const size_t n = evbuffer_get_length(evhttp_request_get_input_buffer(req));
          const std::string body = absl::StrCat("{\"bytes\":", n, "}");
          evbuffer_add(evhttp_request_get_output_buffer(req), body.data(), body.size());
          evhttp_send_reply(req, 200, "OK", nullptr);
        },
        nullptr);
    evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, "127.0.0.1", 0);
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    loop_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); });
  }
  ~Server() {
    event_base_loopexit(base_, nullptr);
    loop_.join();
    evhttp_free(http_);
    event_base_loop(base_, EVLOOP_NONBLOCK);  // finalizes the freed connections
    event_base_free(base_);
  }
  int port() const { return port_; }
  const BoundedEvhttp::Counters& counters() const { return bounded_->counters(); }

 private:
  event_base* base_;
  evhttp* http_;
  std::unique_ptr<BoundedEvhttp> bounded_;
  int port_ = 0;
  std::thread loop_;
};

// A client socket; reads block for at most 30 s (a guard against a hung test).
class Client {
 public:
  explicit Client(int port) : fd_(::hb::testing::ConnectLoopback(port)) {}
  ~Client() { close(fd_); }
  // Sends what the server takes; false once it stopped taking (closed or reset).
  bool Send(const std::string& data) {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  std::string ReadAll() {
    std::string in;
    char buf[65536];
    ssize_t n;
    while ((n = recv(fd_, buf, sizeof(buf), 0)) > 0) in.append(buf, static_cast<size_t>(n));
    return in;
  }

 private:
  int fd_;
};

HttpServerLimits SmallLimits() {
  HttpServerLimits limits;
  limits.max_request_line_bytes = 256;
  limits.max_header_bytes = 1024;
  limits.max_header_count = 8;
  limits.max_body_bytes = 100;
  limits.max_request_time = absl::Milliseconds(300);
  limits.linger = absl::Milliseconds(200);
  return limits;
}

std::string Post(const std::string& body, const std::string& extra_headers = "") {
  return absl::StrCat("POST /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n", extra_headers,
                      "Content-Length: ", body.size(), "\r\n\r\n", body);
}

TEST(BoundedEvhttpTest, RequestWithinTheLimitsIsServed) {
  Server server(SmallLimits());
  Client client(server.port());
  ASSERT_TRUE(client.Send(Post(std::string(100, 'b'))));
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("{\"bytes\":100}"));
  EXPECT_EQ(server.counters().rejected.load(), 0);
}

// The head and the body of a response leave in one write (commit 8bc8fdb): written apart, the
// body waits behind Nagle for the head's ACK, ~40 ms per response with a delayed-ACK client.
// Counted, not timed: each small response must cost exactly one sendmsg.
TEST(BoundedEvhttpTest, AResponsesHeadAndBodyLeaveInOneWrite) {
  Server server(SmallLimits());
  for (int i = 1; i <= 3; ++i) {
    Client client(server.port());
    ASSERT_TRUE(client.Send(Post(std::string(10, 'b'))));
    const std::string reply = client.ReadAll();
    ASSERT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
    ASSERT_THAT(reply, HasSubstr("\r\n\r\n{\"bytes\":10}"));
    EXPECT_EQ(server.counters().sends.load(), i) << "response " << i;
  }
}

TEST(BoundedEvhttpTest, PipelinedRequestsAreEachServed) {
  Server server(SmallLimits());
  Client client(server.port());
  const std::string keep = "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
  ASSERT_TRUE(client.Send(keep + Post("12345")));
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, HasSubstr("{\"bytes\":3}"));
  EXPECT_THAT(reply, HasSubstr("{\"bytes\":5}"));
}

TEST(BoundedEvhttpTest, HeaderThatNeverEndsIsAnswered431WhileStillArriving) {
  Server server(SmallLimits());
  Client client(server.port());
  // A 1 MB header line: the server answers after the first kilobyte and discards the rest.
  client.Send("GET / HTTP/1.1\r\nX-Bomb: ");
  const std::string chunk(64 << 10, 'a');
  for (int i = 0; i < 16 && client.Send(chunk); ++i) {
  }
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  EXPECT_THAT(reply, HasSubstr("Content-Type: application/json\r\n"));
  EXPECT_THAT(reply, HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(
      reply,
      HasSubstr(
          R"j({"detail":"request head is over the limit of 1024 bytes (max_header_bytes)"})j"));
}

TEST(BoundedEvhttpTest, TooManyHeaderLinesIs431) {
  Server server(SmallLimits());
  Client client(server.port());
  std::string headers;
  for (int i = 0; i < 9; ++i) absl::StrAppend(&headers, "X-", i, ": v\r\n");
  client.Send(absl::StrCat("GET / HTTP/1.1\r\n", headers, "\r\n"));
  EXPECT_THAT(client.ReadAll(),
              HasSubstr(R"j({"detail":"more than 8 request header lines (max_header_count)"})j"));
}

TEST(BoundedEvhttpTest, LongRequestLineIs414) {
  Server server(SmallLimits());
  Client client(server.port());
  client.Send(absl::StrCat("GET /", std::string(300, 'p'), " HTTP/1.1\r\n\r\n"));
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 414 URI Too Long\r\n"));
  EXPECT_THAT(reply, HasSubstr("over the limit of 256 bytes (max_request_line_bytes)"));
}

TEST(BoundedEvhttpTest, BodyOverTheLimitIs413BeforeItIsSent) {
  Server server(SmallLimits());
  Client client(server.port());
  // Only the head is sent: the answer does not wait for the 8 MB body.
  client.Send("POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 8388608\r\n\r\n");
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 413 Content Too Large\r\n"));
  EXPECT_THAT(
      reply,
      HasSubstr(
          R"j({"detail":"request body is 8388608 bytes, over the limit of 100 bytes (max_body_bytes)"})j"));
}

TEST(BoundedEvhttpTest, ChunkedAndMalformedLengthsAreRefused) {
  Server server(SmallLimits());
  {
    Client client(server.port());
    client.Send("POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    EXPECT_THAT(client.ReadAll(), StartsWith("HTTP/1.1 411 Length Required\r\n"));
  }
  {
    Client client(server.port());
    client.Send("POST /x HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
    EXPECT_THAT(client.ReadAll(), HasSubstr(R"({"detail":"conflicting Content-Length headers"})"));
  }
  {
    Client client(server.port());
    client.Send("POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n");
    EXPECT_THAT(client.ReadAll(), HasSubstr(R"({"detail":"malformed Content-Length \"-1\""})"));
  }
}

TEST(BoundedEvhttpTest, TricklingClientIsAnswered408) {
  Server server(SmallLimits());
  Client client(server.port());
  // Half a head, then nothing: the whole request did not arrive within max_request_time.
  client.Send("GET / HTTP/1.1\r\nHost: a\r\n");
  const std::string reply = client.ReadAll();
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
  EXPECT_THAT(reply, HasSubstr("request did not arrive whole within 300ms of its first byte"));
  EXPECT_EQ(server.counters().timed_out.load(), 1);
}

TEST(BoundedEvhttpTest, BodyThatTricklesIsAnswered408) {
  Server server(SmallLimits());
  Client client(server.port());
  client.Send("POST /x HTTP/1.1\r\nContent-Length: 50\r\n\r\nonly-part");
  EXPECT_THAT(client.ReadAll(), StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
}

TEST(BoundedEvhttpTest, CheckLimits) {
  HttpServerLimits limits;
  EXPECT_TRUE(CheckHttpServerLimits(limits).ok());
  limits.max_header_count = 0;
  EXPECT_EQ(CheckHttpServerLimits(limits).message(), "max_header_count must be > 0");
  limits = HttpServerLimits();
  limits.max_request_line_bytes = limits.max_header_bytes + 1;
  EXPECT_EQ(CheckHttpServerLimits(limits).message(),
            "max_request_line_bytes must be <= max_header_bytes");
}

TEST(HttpRequestFramerTest, SplitsHeadAndBodyOneByteAtATime) {
  const HttpServerLimits limits = SmallLimits();
  HttpRequestFramer framer(limits);
  const std::string request = "\r\nPOST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\n";
  std::string head;
  for (char c : request) {
    ASSERT_EQ(framer.ConsumeHead(std::string(1, c)), 1u);
    if (framer.head_ready()) head = framer.TakeHead();
  }
  // The blank line before the request line is skipped.
  EXPECT_EQ(head, "POST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\n");
  EXPECT_EQ(framer.phase(), HttpRequestFramer::Phase::kBody);
  EXPECT_EQ(framer.body_left(), 2u);
  framer.ConsumeBody(2);
  EXPECT_EQ(framer.phase(), HttpRequestFramer::Phase::kIdle);
}

TEST(HttpRequestFramerTest, HeadRequestHasNoBodyWhateverItsLength) {
  const HttpServerLimits limits = SmallLimits();
  HttpRequestFramer framer(limits);
  const std::string head = "HEAD / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n";
  EXPECT_EQ(framer.ConsumeHead(head), head.size());
  EXPECT_TRUE(framer.head_ready());
  EXPECT_EQ(framer.phase(), HttpRequestFramer::Phase::kIdle);
}

TEST(HttpRequestFramerTest, NeverBuffersPastTheHeadLimit) {
  const HttpServerLimits limits = SmallLimits();
  HttpRequestFramer framer(limits);
  framer.ConsumeHead("GET / HTTP/1.1\r\nX: ");
  const std::string chunk(100, 'a');
  while (framer.phase() != HttpRequestFramer::Phase::kRejected) {
    framer.ConsumeHead(chunk);
    ASSERT_LE(framer.buffered(), limits.max_header_bytes);
  }
  EXPECT_EQ(framer.error_status(), 431);
  EXPECT_EQ(framer.buffered(), 0u);
}

}  // namespace
}  // namespace hb
