// CurlMultiHttpClient against a real loopback HTTP server: what goes on the wire, keep-alive
// reuse, error mapping, timeouts, cancellation, queueing, timers, several multi handles on one
// loop and wakeups from the loop's own callbacks. Every test runs twice: with http:// requests
// sent by libcurl (plain_http1 off) and by PlainHttp1Pool (on, the default); the pool's own
// corner cases are in plain_http1_test.cc.
#include "http/curl_http_client.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::LoopbackHttpServer;
using ::hb::testing::LoopbackRequest;
using ::hb::testing::LoopbackResponse;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

// Waits for one callback and keeps its result.
struct Waiter {
  absl::Notification done;
  absl::StatusOr<HttpResponse> result = absl::UnknownError("not called");
  HttpCallback Callback() {
    return [this](absl::StatusOr<HttpResponse> r) {
      result = std::move(r);
      done.Notify();
    };
  }
  bool Wait() { return done.WaitForNotificationWithTimeout(absl::Seconds(10)); }
};

std::unique_ptr<LoopbackHttpServer> StartServer(LoopbackHttpServer::Handler handler) {
  auto server = LoopbackHttpServer::Start(std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status();
  return *std::move(server);
}

// The parameter: whether http:// requests go through PlainHttp1Pool.
class CurlHttpClientTest : public ::testing::TestWithParam<bool> {
 protected:
  std::unique_ptr<CurlMultiHttpClient> MakeClient(CurlHttpClientOptions options = {}) {
    options.plain_http1 = GetParam();
    auto client = CurlMultiHttpClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return *std::move(client);
  }
};

INSTANTIATE_TEST_SUITE_P(Transports, CurlHttpClientTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "PlainHttp1" : "Libcurl";
                         });

HttpRequest Post(const std::string& url, std::string body,
                 absl::Duration timeout = absl::Seconds(10)) {
  HttpRequest request;
  request.url = url;
  request.body = std::move(body);
  request.headers = {{"Content-Type", "application/json"}};
  request.timeout = timeout;
  return request;
}

TEST_P(CurlHttpClientTest, SendsThePostAndReturnsTheWholeResponse) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.status = 200;
    r.headers = {{"X-RateLimit-Remaining-Requests", "41"}};
    r.body = R"({"ok":true})";
    return r;
  });
  auto client = MakeClient();
  const std::string body(5000, 'b');  // > 1 KiB: must not wait for 100-continue
  Waiter w;
  client->Post(Post(server->base_url() + "/v1/chat/completions", body), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  EXPECT_EQ(w.result->status_code, 200);
  EXPECT_EQ(w.result->body, R"({"ok":true})");
  ASSERT_NE(w.result->Header("x-ratelimit-remaining-requests"), nullptr);
  EXPECT_EQ(*w.result->Header("x-ratelimit-remaining-requests"), "41");
  std::vector<LoopbackRequest> seen = server->requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].uri, "/v1/chat/completions");
  EXPECT_EQ(seen[0].body, body);
  EXPECT_EQ(seen[0].Header("Content-Type"), "application/json");
  EXPECT_EQ(seen[0].Header("Expect"), "");
}

TEST_P(CurlHttpClientTest, HttpErrorsAreResponsesNotTransportErrors) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.status = 503;
    r.headers = {{"Retry-After", "2"}};
    r.body = "overloaded";
    return r;
  });
  auto client = MakeClient();
  Waiter w;
  client->Post(Post(server->base_url() + "/x", "{}"), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  EXPECT_EQ(w.result->status_code, 503);
  EXPECT_EQ(*w.result->Header("retry-after"), "2");
}

// `plain` gzip-compressed (a gzip member, as Content-Encoding: gzip carries).
std::string Gzip(const std::string& plain) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, plain.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  z.avail_in = static_cast<uInt>(plain.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A server answering 100 KiB bodies, and a client whose default body limit is 64 KiB.
auto StartBigBodyServer() {
  return StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.body = std::string(100 * 1024, 'x');
    return r;
  });
}
CurlHttpClientOptions With64KiBLimit() {
  CurlHttpClientOptions options;
  options.max_response_body_bytes = 64 * 1024;
  return options;
}

TEST_P(CurlHttpClientTest, ABodyOverTheLimitIsAFinalErrorNamingTheLimit) {
  auto server = StartBigBodyServer();
  auto client = MakeClient(With64KiBLimit());
  Waiter w;
  client->Post(Post(server->base_url() + "/big", "{}"), w.Callback());
  ASSERT_TRUE(w.Wait());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("response body over the 65536-byte limit")));
}

// A request may allow a larger body than the client's default (a file download).
TEST_P(CurlHttpClientTest, ARequestMayRaiseTheBodyLimit) {
  auto server = StartBigBodyServer();
  auto client = MakeClient(With64KiBLimit());
  HttpRequest request = Post(server->base_url() + "/big", "{}");
  request.max_response_body_bytes = 128 * 1024;
  Waiter w;
  client->Post(std::move(request), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  EXPECT_EQ(w.result->body.size(), 100u * 1024);
}

TEST_P(CurlHttpClientTest, GetSendsNoBody) {
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{200, {}, "ok"}; });
  auto client = MakeClient();
  HttpRequest request;
  request.method = "GET";
  request.url = server->base_url() + "/files/f1/content";
  Waiter w;
  client->Post(std::move(request), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  EXPECT_EQ(w.result->body, "ok");
  ASSERT_EQ(server->requests().size(), 1u);
  EXPECT_EQ(server->requests()[0].method, "GET");
  EXPECT_EQ(server->requests()[0].uri, "/files/f1/content");
  EXPECT_EQ(server->requests()[0].body, "");
}

// One request at a time, so each reuses the easy handle the previous one left (reset): nothing
// of a request (method, body, headers) may reach the next.
TEST_P(CurlHttpClientTest, AReusedHandleCarriesNothingOverFromTheRequestBefore) {
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{200, {}, "ok"}; });
  auto client = MakeClient();
  auto send = [&client](HttpRequest request) {
    Waiter w;
    client->Post(std::move(request), w.Callback());
    ASSERT_TRUE(w.Wait());
    ASSERT_TRUE(w.result.ok()) << w.result.status();
  };
  HttpRequest first = Post(server->base_url() + "/first", std::string(3000, 'a'));
  first.headers.push_back({"X-Only-First", "1"});
  send(std::move(first));
  HttpRequest get;
  get.method = "GET";
  get.url = server->base_url() + "/second";
  send(std::move(get));
  send(Post(server->base_url() + "/third", "{}"));
  const std::vector<LoopbackRequest> seen = server->requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].Header("X-Only-First"), "1");
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_EQ(seen[1].uri, "/second");
  EXPECT_EQ(seen[1].body, "");
  EXPECT_EQ(seen[1].Header("X-Only-First"), "");
  EXPECT_EQ(seen[2].method, "POST");
  EXPECT_EQ(seen[2].body, "{}");
  EXPECT_EQ(seen[2].Header("Content-Type"), "application/json");
  EXPECT_EQ(seen[2].Header("X-Only-First"), "");
  EXPECT_EQ(client->stats().requests_completed, 3);
}

// Body parts go out in order, a file part read from disk while sending (a multipart upload).
TEST_P(CurlHttpClientTest, BodyPartsAreStreamedInOrderFromMemoryAndFiles) {
  char path[] = "/tmp/hb_body_part_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string file_content(300 * 1024, 'f');  // several read callbacks
  ASSERT_EQ(::write(fd, file_content.data(), file_content.size()),
            static_cast<ssize_t>(file_content.size()));
  ::close(fd);
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{200, {}, "{}"}; });
  auto client = MakeClient();
  HttpRequest request = Post(server->base_url() + "/files", "ignored");
  request.body_parts = {HttpBodyPart::Bytes("head|"), HttpBodyPart::File(path),
                        HttpBodyPart::Bytes("|tail")};
  Waiter w;
  client->Post(std::move(request), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  ASSERT_EQ(server->requests().size(), 1u);
  EXPECT_EQ(server->requests()[0].method, "POST");
  EXPECT_EQ(server->requests()[0].body, "head|" + file_content + "|tail");

  ::unlink(path);
  HttpRequest missing = Post(server->base_url() + "/files", "");
  missing.body_parts = {HttpBodyPart::File(path)};
  Waiter w2;
  client->Post(std::move(missing), w2.Callback());
  ASSERT_TRUE(w2.Wait());
  EXPECT_THAT(w2.result, StatusIs(absl::StatusCode::kFailedPrecondition,
                                  HasSubstr("cannot read request body file")));
}

// Shared in-memory parts (the grader's conversation, sent for every rubric item): a small body
// is joined and sent at once, a large one streamed; either way the bytes arrive in order, and
// the parts are not consumed (the next request sends them again).
TEST_P(CurlHttpClientTest, SharedPartsArriveInOrderWhateverTheirSize) {
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{200, {}, "{}"}; });
  auto client = MakeClient();
  for (const size_t middle_size : {size_t{10}, size_t{200} << 10}) {
    auto head = std::make_shared<const std::string>("head|");
    auto middle = std::make_shared<const std::string>(std::string(middle_size, 'm'));
    auto item = std::make_shared<const std::string>("|item|");
    for (int round = 0; round < 2; ++round) {
      HttpRequest request = Post(server->base_url() + "/v1/chat/completions", "ignored");
      for (const auto& part : {head, middle, item, middle, item}) {
        request.body_parts.push_back(HttpBodyPart::Shared(part));
      }
      Waiter w;
      client->Post(std::move(request), w.Callback());
      ASSERT_TRUE(w.Wait());
      ASSERT_TRUE(w.result.ok()) << w.result.status();
    }
    EXPECT_EQ(*middle, std::string(middle_size, 'm'));
  }
  const std::string small =
      "head|" + std::string(10, 'm') + "|item|" + std::string(10, 'm') + "|item|";
  const std::string large =
      "head|" + std::string(200 << 10, 'm') + "|item|" + std::string(200 << 10, 'm') + "|item|";
  ASSERT_EQ(server->requests().size(), 4u);
  EXPECT_EQ(server->requests()[0].body, small);
  EXPECT_EQ(server->requests()[1].body, small);
  EXPECT_EQ(server->requests()[2].body, large);
  EXPECT_EQ(server->requests()[3].body, large);
}

TEST_P(CurlHttpClientTest, TheLimitAppliesAfterDecompression) {
  const std::string bomb = Gzip(std::string(1 << 20, '\0'));
  ASSERT_LT(bomb.size(), 64u * 1024);
  auto server = StartServer([&bomb](const LoopbackRequest&) {
    LoopbackResponse r;
    r.headers = {{"Content-Encoding", "gzip"}};
    r.body = bomb;
    return r;
  });
  CurlHttpClientOptions options;
  options.max_response_body_bytes = 64 * 1024;
  auto client = MakeClient(options);
  Waiter w;
  client->Post(Post(server->base_url() + "/bomb", "{}"), w.Callback());
  ASSERT_TRUE(w.Wait());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("over the 65536-byte limit")));
}

TEST_P(CurlHttpClientTest, RedirectsAreReturnedNotFollowed) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.status = 302;
    r.headers = {{"Location", "http://127.0.0.1:1/elsewhere"}};
    return r;
  });
  auto client = MakeClient();
  Waiter w;
  client->Post(Post(server->base_url() + "/moved", "{}"), w.Callback());
  ASSERT_TRUE(w.Wait());
  ASSERT_TRUE(w.result.ok()) << w.result.status();
  EXPECT_EQ(w.result->status_code, 302);
  EXPECT_EQ(server->requests().size(), 1u);
}

TEST_P(CurlHttpClientTest, OnlyHttpAndHttpsUrlsAreAccepted) {
  auto client = MakeClient();
  for (const char* url : {"file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"}) {
    Waiter w;
    client->Post(Post(url, "{}"), w.Callback());
    ASSERT_TRUE(w.Wait());
    EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_)) << url;
  }
}

TEST_P(CurlHttpClientTest, ReusesOneKeepAliveConnectionForSequentialRequests) {
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{}; });
  auto client = MakeClient();
  for (int i = 0; i < 20; ++i) {
    Waiter w;
    client->Post(Post(server->base_url() + "/x", "{}"), w.Callback());
    ASSERT_TRUE(w.Wait());
    ASSERT_TRUE(w.result.ok()) << w.result.status();
  }
  std::set<int> ports;
  for (const LoopbackRequest& r : server->requests()) ports.insert(r.peer_port);
  EXPECT_EQ(ports.size(), 1u);
  EXPECT_EQ(client->stats().connections_opened, 1);
  EXPECT_EQ(client->stats().requests_completed, 20);
}

TEST_P(CurlHttpClientTest, NewConnectionsAfterClosedOnesAreWatchedAgain) {
  // "Connection: close" makes every request open a fresh socket, usually with the number the
  // previous one had: the loop must register it afresh rather than trust what it knew about
  // the old socket. If it did not, each request would only progress on libcurl's timeouts
  // (measured: about 0.2 s a request) and 100 of them would not finish within 10 s; done
  // right, they take a few milliseconds each.
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.headers = {{"Connection", "close"}};
    r.body = "closing";
    return r;
  });
  auto client = MakeClient();
  constexpr int kRequests = 100;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (int i = 0; i < kRequests; ++i) {
    Waiter w;
    client->Post(Post(server->base_url() + "/x", "{}"), w.Callback());
    ASSERT_TRUE(w.done.WaitForNotificationWithTimeout(deadline - absl::Now())) << "request " << i;
    ASSERT_TRUE(w.result.ok()) << w.result.status();
    EXPECT_EQ(w.result->body, "closing");
  }
  EXPECT_EQ(client->stats().connections_opened, kRequests);
}

TEST_P(CurlHttpClientTest, ManyConcurrentRequestsOnOneLoopWithABoundedQueue) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.delay = absl::Milliseconds(20);
    return r;
  });
  CurlHttpClientOptions options;
  options.max_in_flight = 8;
  auto client = MakeClient(options);
  constexpr int kRequests = 64;
  absl::BlockingCounter counter(kRequests);
  std::atomic<int> ok{0};
  for (int i = 0; i < kRequests; ++i) {
    client->Post(Post(server->base_url() + "/x", "{}"), [&](absl::StatusOr<HttpResponse> r) {
      if (r.ok() && r->status_code == 200) ok.fetch_add(1);
      counter.DecrementCount();
    });
  }
  counter.Wait();
  EXPECT_EQ(ok.load(), kRequests);
  // Never more connections than requests allowed in flight.
  std::set<int> ports;
  for (const LoopbackRequest& r : server->requests()) ports.insert(r.peer_port);
  EXPECT_LE(ports.size(), 8u);
  EXPECT_EQ(client->stats().in_flight, 0);
  EXPECT_EQ(client->stats().queued, 0);
}

TEST_P(CurlHttpClientTest, ConnectionRefusedIsUnavailable) {
  // A port that was free a moment ago and has no listener.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  auto client = MakeClient();
  Waiter w;
  client->Post(Post("http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x", "{}"),
               w.Callback());
  ASSERT_TRUE(w.Wait());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect")));
}

TEST_P(CurlHttpClientTest, TimeoutIsDeadlineExceeded) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.hang = true;
    return r;
  });
  auto client = MakeClient();
  Waiter w;
  client->Post(Post(server->base_url() + "/x", "{}", absl::Milliseconds(200)), w.Callback());
  ASSERT_TRUE(w.Wait());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("imeout")));
}

TEST_P(CurlHttpClientTest, CancelAbortsARequestInFlight) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.hang = true;
    return r;
  });
  auto client = MakeClient();
  Waiter w;
  HttpClient::CallId id =
      client->Post(Post(server->base_url() + "/x", "{}", absl::Seconds(60)), w.Callback());
  ASSERT_TRUE(server->WaitForRequests(1, absl::Seconds(10)));
  client->Cancel(id);
  ASSERT_TRUE(w.Wait());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_EQ(client->stats().in_flight, 0);
}

TEST_P(CurlHttpClientTest, ShutdownCompletesEverythingWithCancelled) {
  auto server = StartServer([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.hang = true;
    return r;
  });
  auto client = MakeClient();
  Waiter w;
  client->Post(Post(server->base_url() + "/x", "{}", absl::Seconds(60)), w.Callback());
  ASSERT_TRUE(server->WaitForRequests(1, absl::Seconds(10)));
  bool timer_ran = false;
  client->Schedule(absl::Hours(1), [&timer_ran] { timer_ran = true; });
  client.reset();
  ASSERT_TRUE(w.done.HasBeenNotified());
  EXPECT_THAT(w.result, StatusIs(absl::StatusCode::kCancelled, HasSubstr("shut down")));
  EXPECT_TRUE(timer_ran);  // pending work is run, never silently dropped
}

TEST_P(CurlHttpClientTest, TimersFireInOrderNotEarlyAndCanBeCancelled) {
  auto client = MakeClient();
  absl::Mutex mu;
  std::vector<int> order;
  absl::BlockingCounter fired(2);
  const absl::Time start = absl::Now();
  absl::Time first_fired;
  client->Schedule(absl::Milliseconds(80), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(2);
    fired.DecrementCount();
  });
  client->Schedule(absl::Milliseconds(30), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(1);
    first_fired = absl::Now();
    fired.DecrementCount();
  });
  Scheduler::TimerId cancelled = client->Schedule(absl::Milliseconds(10), [&] {
    absl::MutexLock lock(&mu);
    order.push_back(99);
  });
  EXPECT_TRUE(client->CancelTimer(cancelled));
  EXPECT_FALSE(client->CancelTimer(cancelled));
  fired.Wait();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(order, ::testing::ElementsAre(1, 2));
  EXPECT_GE(first_fired - start, absl::Milliseconds(30));
}

TEST_P(CurlHttpClientTest, SpreadsRequestsOverSeveralMultiHandlesWithoutMixingThemUp) {
  // Each reply echoes its request body, so a response delivered to the wrong caller (e.g. a
  // socket event dispatched to the wrong multi handle) shows up as a mismatch.
  auto server = StartServer([](const LoopbackRequest& request) {
    LoopbackResponse r;
    r.body = request.body;
    r.delay = absl::Milliseconds(5);
    return r;
  });
  CurlHttpClientOptions options;
  options.max_in_flight = 16;
  options.transfers_per_multi = 4;  // 4 multi handles of at most 4 requests each
  auto client = MakeClient(options);
  constexpr int kRequests = 200;
  absl::BlockingCounter counter(kRequests);
  absl::Mutex mu;
  std::vector<std::string> mismatches;
  for (int i = 0; i < kRequests; ++i) {
    std::string body = "{\"request\":" + std::to_string(i) + "}";
    client->Post(Post(server->base_url() + "/x", body), [&, body](absl::StatusOr<HttpResponse> r) {
      if (!r.ok() || r->body != body) {
        absl::MutexLock lock(&mu);
        mismatches.push_back(r.ok() ? r->body : r.status().ToString());
      }
      counter.DecrementCount();
    });
  }
  counter.Wait();
  EXPECT_THAT(mismatches, ::testing::IsEmpty());
  // Connections are reused within each multi handle: at most 4 per handle, never one per
  // request.
  std::set<int> ports;
  for (const LoopbackRequest& r : server->requests()) ports.insert(r.peer_port);
  EXPECT_LE(ports.size(), 16u);
  EXPECT_LE(client->stats().connections_opened, 16);
  EXPECT_EQ(client->stats().requests_completed, kRequests);
  EXPECT_EQ(client->stats().in_flight, 0);
}

TEST_P(CurlHttpClientTest, ALightlyLoadedClientUsesOneConnectionEvenWithSeveralMultiHandles) {
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{}; });
  CurlHttpClientOptions options;
  options.max_in_flight = 8;
  options.transfers_per_multi = 1;  // 8 multi handles
  auto client = MakeClient(options);
  for (int i = 0; i < 10; ++i) {
    Waiter w;
    client->Post(Post(server->base_url() + "/x", "{}"), w.Callback());
    ASSERT_TRUE(w.Wait());
    ASSERT_TRUE(w.result.ok()) << w.result.status();
  }
  EXPECT_EQ(client->stats().connections_opened, 1);
}

TEST_P(CurlHttpClientTest, PostsAndTimersFromTheLoopsOwnCallbacksRunPromptly) {
  // Work submitted from a callback (on the loop thread) does not write the wakeup eventfd; the
  // loop must still pick it up before it sleeps. If it did not, each link of these chains
  // would wait for one of the loop's idle timeouts (measured: about 0.45 s a link), and 50
  // links would not finish within the 10 s the Waiter allows; done right, they take
  // milliseconds.
  constexpr int kLinks = 50;
  // Declared before the client so that they outlive it: on a failure the client's destructor
  // still runs the chains' pending callbacks.
  std::atomic<int> posts{0};
  Waiter posts_done;
  std::function<void(absl::StatusOr<HttpResponse>)> next_post;
  std::atomic<int> timers{0};
  absl::Notification timers_done;
  std::function<void()> next_timer;
  auto server = StartServer([](const LoopbackRequest&) { return LoopbackResponse{}; });
  const std::string url = server->base_url() + "/x";
  auto owned_client = MakeClient();
  CurlMultiHttpClient* client = owned_client.get();

  next_post = [&](absl::StatusOr<HttpResponse> r) {
    if (!r.ok() || posts.fetch_add(1) + 1 == kLinks) {
      if (!posts_done.done.HasBeenNotified()) posts_done.Callback()(std::move(r));
      return;
    }
    client->Post(Post(url, "{}"),
                 [&](absl::StatusOr<HttpResponse> next) { next_post(std::move(next)); });
  };
  client->Post(Post(url, "{}"), [&](absl::StatusOr<HttpResponse> r) { next_post(std::move(r)); });
  ASSERT_TRUE(posts_done.Wait());
  ASSERT_TRUE(posts_done.result.ok()) << posts_done.result.status();
  EXPECT_EQ(posts.load(), kLinks);

  next_timer = [&] {
    if (timers.fetch_add(1) + 1 >= kLinks) {
      if (!timers_done.HasBeenNotified()) timers_done.Notify();
      return;
    }
    client->Schedule(absl::Milliseconds(1), [&] { next_timer(); });
  };
  client->Schedule(absl::ZeroDuration(), [&] { next_timer(); });
  ASSERT_TRUE(timers_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(timers.load(), kLinks);
}

}  // namespace
}  // namespace hb
