// CurlHttpClientGroup against a real loopback HTTP server: requests spread over the loops with
// each reply reaching its own caller, cancellation reaching the loop that holds the call, timers,
// and the error for a group without loops.
#include "http/curl_http_client_group.h"

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
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

std::unique_ptr<CurlHttpClientGroup> MakeGroup(int loops) {
  auto group = CurlHttpClientGroup::Create(CurlHttpClientOptions{}, loops);
  EXPECT_TRUE(group.ok()) << group.status();
  return *std::move(group);
}

HttpRequest Post(const std::string& url, std::string body) {
  HttpRequest request;
  request.url = url;
  request.body = std::move(body);
  request.timeout = absl::Seconds(60);
  return request;
}

TEST(CurlHttpClientGroupTest, SpreadsRequestsOverItsLoopsAndEachReplyReachesItsCaller) {
  auto server = LoopbackHttpServer::Start([](const LoopbackRequest& request) {
    LoopbackResponse r;
    r.status = 200;
    r.body = request.body;  // echo: a reply handed to the wrong caller shows
    return r;
  });
  ASSERT_TRUE(server.ok()) << server.status();
  auto group = MakeGroup(3);
  ASSERT_EQ(group->loops(), 3);
  constexpr int kRequests = 60;
  absl::Mutex mu;
  std::vector<std::string> mismatches;
  std::set<std::thread::id> threads;
  absl::BlockingCounter done(kRequests);
  for (int i = 0; i < kRequests; ++i) {
    const std::string body = absl::StrCat("request ", i);
    group->Post(Post((*server)->base_url() + "/x", body),
                [&, body](absl::StatusOr<HttpResponse> reply) {
                  absl::MutexLock lock(&mu);
                  threads.insert(std::this_thread::get_id());
                  if (!reply.ok() || reply->body != body) mismatches.push_back(body);
                  done.DecrementCount();
                });
  }
  done.Wait();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(mismatches, ::testing::IsEmpty());
  EXPECT_EQ(threads.size(), 3u);  // round robin: every loop ran completions
  const CurlHttpClientStats stats = group->stats();
  EXPECT_EQ(stats.requests_started, kRequests);
  EXPECT_EQ(stats.requests_completed, kRequests);
}

TEST(CurlHttpClientGroupTest, CancelReachesTheLoopHoldingTheCall) {
  auto server = LoopbackHttpServer::Start([](const LoopbackRequest&) {
    LoopbackResponse r;
    r.hang = true;
    return r;
  });
  ASSERT_TRUE(server.ok()) << server.status();
  auto group = MakeGroup(2);
  // Two calls land on different loops; cancel each and expect both cancelled.
  absl::Notification first_done, second_done;
  absl::StatusOr<HttpResponse> first, second;
  HttpClient::CallId a =
      group->Post(Post((*server)->base_url() + "/a", "{}"), [&](absl::StatusOr<HttpResponse> r) {
        first = std::move(r);
        first_done.Notify();
      });
  HttpClient::CallId b =
      group->Post(Post((*server)->base_url() + "/b", "{}"), [&](absl::StatusOr<HttpResponse> r) {
        second = std::move(r);
        second_done.Notify();
      });
  EXPECT_NE(a, b);
  ASSERT_TRUE((*server)->WaitForRequests(2, absl::Seconds(10)));
  group->Cancel(b);
  ASSERT_TRUE(second_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(second, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_FALSE(first_done.HasBeenNotified());
  group->Cancel(a);
  ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(first, StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
  EXPECT_EQ(group->stats().in_flight, 0);
}

TEST(CurlHttpClientGroupTest, TimersRunAndCanBeCancelled) {
  auto group = MakeGroup(2);
  absl::Notification fired;
  bool cancelled_ran = false;
  Scheduler::TimerId cancelled =
      group->Schedule(absl::Hours(1), [&cancelled_ran] { cancelled_ran = true; });
  group->Schedule(absl::Milliseconds(1), [&fired] { fired.Notify(); });
  EXPECT_TRUE(group->CancelTimer(cancelled));
  ASSERT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(10)));
  group.reset();
  EXPECT_FALSE(cancelled_ran);
}

TEST(CurlHttpClientGroupTest, AGroupNeedsALoop) {
  EXPECT_THAT(CurlHttpClientGroup::Create(CurlHttpClientOptions{}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one event loop")));
}

}  // namespace
}  // namespace hb
