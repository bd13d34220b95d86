// PlainHttp1Pool through CurlMultiHttpClient (plain_http1 on, the default) against a scripted
// server that writes exact bytes: framing (chunked, 1xx, to the end of the connection), a
// kept-alive connection the server closed, malformed answers, what goes on the wire, and a
// proxy in the environment handing everything back to libcurl. What both transports share is
// tested on each in curl_http_client_test.cc.
#include "http/plain_http1.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/curl_http_client.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

// A one-thread TCP server on 127.0.0.1 that serves one connection at a time: it reads each
// request (head and Content-Length body) and writes what `script` returns for the n-th
// request (0-based, over all connections), then closes the connection when asked.
class ScriptedServer {
 public:
  struct Reply {
    std::string bytes;
    bool close = false;  // close the connection after writing `bytes` (which may be empty)
  };
  using Script = std::function<Reply(int request)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    EXPECT_EQ(listen(listen_fd_, 16), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    close(listen_fd_);
  }

  std::string url(const std::string& path) const {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }
  int port() const { return port_; }
  std::vector<std::string> heads() const {
    absl::MutexLock lock(&mu_);
    return heads_;
  }
  int connections() const {
    absl::MutexLock lock(&mu_);
    return connections_;
  }

 private:
  void Serve() {
    while (true) {
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      timeval guard{30, 0};  // a hung test fails rather than blocks forever
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
      {
        absl::MutexLock lock(&mu_);
        ++connections_;
      }
      ServeConnection(fd);
      close(fd);
    }
  }

  void ServeConnection(int fd) {
    std::string in;
    while (true) {
      size_t end;
      while ((end = in.find("\r\n\r\n")) == std::string::npos) {
        if (!Read(fd, in)) return;
      }
      const std::string head = in.substr(0, end + 4);
      size_t length = 0;
      for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
        if (absl::StartsWithIgnoreCase(line, "Content-Length:")) {
          EXPECT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)), &length));
        }
      }
      while (in.size() < end + 4 + length) {
        if (!Read(fd, in)) return;
      }
      in.erase(0, end + 4 + length);
      int n;
      {
        absl::MutexLock lock(&mu_);
        n = static_cast<int>(heads_.size());
        heads_.push_back(head);
      }
      const Reply reply = script_(n);
      if (!reply.bytes.empty()) {
        EXPECT_EQ(send(fd, reply.bytes.data(), reply.bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(reply.bytes.size()));
      }
      if (reply.close) return;
    }
  }

  static bool Read(int fd, std::string& in) {
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return false;
    in.append(buffer, static_cast<size_t>(n));
    return true;
  }

  const Script script_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  mutable absl::Mutex mu_;
  std::vector<std::string> heads_ ABSL_GUARDED_BY(mu_);
  int connections_ ABSL_GUARDED_BY(mu_) = 0;
};

// A client whose http:// requests go through the pool: without a proxy in this test's
// environment (the proxy test sets one on purpose).
std::unique_ptr<CurlMultiHttpClient> MakeClient() {
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"}) unsetenv(name);
  auto client = CurlMultiHttpClient::Create(CurlHttpClientOptions{});
  EXPECT_TRUE(client.ok()) << client.status();
  return *std::move(client);
}

HttpRequest JsonPost(const std::string& url, std::string body = "{}") {
  HttpRequest request;
  request.url = url;
  request.body = std::move(body);
  request.headers = {{"Content-Type", "application/json"}};
  request.timeout = absl::Seconds(10);
  return request;
}

absl::StatusOr<HttpResponse> Send(CurlMultiHttpClient& client, HttpRequest request) {
  absl::Notification done;
  absl::StatusOr<HttpResponse> result = absl::UnknownError("not called");
  client.Post(std::move(request), [&](absl::StatusOr<HttpResponse> r) {
    result = std::move(r);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(20)));
  return result;
}

constexpr char kOk[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

TEST(PlainHttp1Test, AChunkedBodyIsJoinedAndItsConnectionKept) {
  ScriptedServer server([](int) {
    return ScriptedServer::Reply{
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Id: 7\r\n\r\n"
        "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n"};
  });
  auto client = MakeClient();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<HttpResponse> r = Send(*client, JsonPost(server.url("/c")));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->status_code, 200);
    EXPECT_EQ(r->body, "hello world");
    ASSERT_NE(r->Header("x-id"), nullptr);
    EXPECT_EQ(*r->Header("x-id"), "7");
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(client->stats().connections_opened, 1);
}

TEST(PlainHttp1Test, InformationalResponsesAreSkipped) {
  ScriptedServer server([](int) {
    return ScriptedServer::Reply{
        "HTTP/1.1 100 Continue\r\nX-Early: 1\r\n\r\n"
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nslow"};
  });
  auto client = MakeClient();
  absl::StatusOr<HttpResponse> r = Send(*client, JsonPost(server.url("/i")));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status_code, 429);
  EXPECT_EQ(r->body, "slow");
  EXPECT_EQ(r->Header("x-early"), nullptr);
  ASSERT_NE(r->Header("retry-after"), nullptr);
  EXPECT_EQ(*r->Header("retry-after"), "3");
}

TEST(PlainHttp1Test, ABodyWithoutLengthEndsWithTheConnection) {
  ScriptedServer server([](int) {
    return ScriptedServer::Reply{"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close",
                                 /*close=*/true};
  });
  auto client = MakeClient();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<HttpResponse> r = Send(*client, JsonPost(server.url("/u")));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->body, "until close");
  }
  EXPECT_EQ(server.connections(), 2);
}

// A kept-alive connection the server closed while idle (its keep-alive timeout) is found out
// only when the next request goes out on it: that request is sent again on a new connection.
TEST(PlainHttp1Test, ARequestOnAConnectionTheServerClosedIsSentOnceMoreOnANewOne) {
  ScriptedServer server([](int n) {
    if (n == 1) return ScriptedServer::Reply{"", /*close=*/true};  // drops the second request
    return ScriptedServer::Reply{kOk};
  });
  auto client = MakeClient();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<HttpResponse> r = Send(*client, JsonPost(server.url("/s"), absl::StrCat(i)));
    ASSERT_TRUE(r.ok()) << "request " << i << ": " << r.status();
    EXPECT_EQ(r->body, "ok");
  }
  EXPECT_EQ(server.heads().size(), 3u);
  EXPECT_EQ(server.connections(), 2);
  EXPECT_EQ(client->stats().connections_opened, 2);
}

// ... but never a request whose own fresh connection was closed: that is the server's answer.
TEST(PlainHttp1Test, AFreshConnectionClosedWithoutAnAnswerIsUnavailableAndNotResent) {
  ScriptedServer server([](int) { return ScriptedServer::Reply{"", /*close=*/true}; });
  auto client = MakeClient();
  EXPECT_THAT(Send(*client, JsonPost(server.url("/e"))),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Empty reply")));
  EXPECT_EQ(server.heads().size(), 1u);
}

TEST(PlainHttp1Test, AnAnswerCutShortIsUnavailable) {
  ScriptedServer server([](int) {
    return ScriptedServer::Reply{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true};
  });
  auto client = MakeClient();
  EXPECT_THAT(Send(*client, JsonPost(server.url("/cut"))),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("before the response ended")));
}

TEST(PlainHttp1Test, AMalformedStatusLineIsUnavailable) {
  ScriptedServer server([](int) { return ScriptedServer::Reply{"HTTX/9 200\r\n\r\n", true}; });
  auto client = MakeClient();
  EXPECT_THAT(Send(*client, JsonPost(server.url("/m"))),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("status line")));
}

TEST(PlainHttp1Test, ADeclaredLengthOverTheLimitFailsBeforeTheBodyIsRead) {
  ScriptedServer server([](int) {
    return ScriptedServer::Reply{"HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n", true};
  });
  auto client = MakeClient();
  HttpRequest request = JsonPost(server.url("/big"));
  request.max_response_body_bytes = 1000;
  EXPECT_THAT(Send(*client, std::move(request)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("1000-byte limit")));
}

TEST(PlainHttp1Test, WhatGoesOnTheWire) {
  ScriptedServer server([](int) { return ScriptedServer::Reply{kOk}; });
  auto client = MakeClient();
  HttpRequest request = JsonPost(server.url("/v1/chat/completions?x=1#fragment"), "{\"a\":1}");
  request.headers.push_back({"User-Agent", "mine/1"});
  request.headers.push_back({"X-Empty", ""});
  ASSERT_TRUE(Send(*client, std::move(request)).ok());
  HttpRequest get;
  get.method = "GET";
  get.url = server.url("");
  ASSERT_TRUE(Send(*client, std::move(get)).ok());
  HttpRequest empty = JsonPost(server.url("/v1/batches/b/cancel"), "");  // no body at all
  empty.headers.clear();
  ASSERT_TRUE(Send(*client, std::move(empty)).ok());
  const std::vector<std::string> heads = server.heads();
  ASSERT_EQ(heads.size(), 3u);
  EXPECT_EQ(heads[0], absl::StrCat("POST /v1/chat/completions?x=1 HTTP/1.1\r\n",
                                   "Host: 127.0.0.1:", server.port(),
                                   "\r\n"
                                   "Accept: */*\r\n"
                                   "Content-Type: application/json\r\n"
                                   "User-Agent: mine/1\r\n"
                                   "Content-Length: 7\r\n\r\n"));
  EXPECT_EQ(heads[1], absl::StrCat("GET / HTTP/1.1\r\nHost: 127.0.0.1:", server.port(),
                                   "\r\nUser-Agent: hb-grader/0.1\r\nAccept: */*\r\n\r\n"));
  EXPECT_EQ(heads[2],
            absl::StrCat("POST /v1/batches/b/cancel HTTP/1.1\r\nHost: 127.0.0.1:", server.port(),
                         "\r\nUser-Agent: hb-grader/0.1\r\nAccept: */*\r\n"
                         "Content-Length: 0\r\n\r\n"));
}

TEST(PlainHttp1Test, AHeaderWithALineBreakIsRefusedAndNothingIsSent) {
  ScriptedServer server([](int) { return ScriptedServer::Reply{kOk}; });
  auto client = MakeClient();
  HttpRequest request = JsonPost(server.url("/h"));
  request.headers.push_back({"X-Key", "a\r\nInjected: 1"});
  EXPECT_THAT(Send(*client, std::move(request)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CR, LF")));
  EXPECT_TRUE(server.heads().empty());
}

TEST(PlainHttp1Test, MalformedUrlsAreInvalidArguments) {
  auto client = MakeClient();
  for (const char* url :
       {"http://127.0.0.1:99999/x", "http:///x", "http://[::1/x", "http://127.0.0.1:80/a b"}) {
    EXPECT_THAT(Send(*client, JsonPost(url)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("URL")))
        << url;
  }
}

// libcurl honours http_proxy; so that such a setup keeps working, a client created with a proxy
// in its environment leaves every request to libcurl (here the proxy refuses, so the request
// fails, where the pool would have reached the server).
TEST(PlainHttp1Test, AProxyInTheEnvironmentLeavesEveryRequestToLibcurl) {
  ScriptedServer server([](int) { return ScriptedServer::Reply{kOk}; });
  ASSERT_EQ(setenv("http_proxy", "http://127.0.0.1:1", 1), 0);
  EXPECT_TRUE(PlainHttp1Pool::ProxyInEnvironment());
  auto proxied = CurlMultiHttpClient::Create(CurlHttpClientOptions{});
  ASSERT_TRUE(proxied.ok()) << proxied.status();
  EXPECT_THAT(Send(**proxied, JsonPost(server.url("/p"))),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  ASSERT_EQ(unsetenv("http_proxy"), 0);
  EXPECT_TRUE(server.heads().empty());
  auto direct = MakeClient();
  EXPECT_TRUE(Send(*direct, JsonPost(server.url("/p"))).ok());
  EXPECT_EQ(server.heads().size(), 1u);
}

}  // namespace
}  // namespace hb
