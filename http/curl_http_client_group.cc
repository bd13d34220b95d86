#include "http/curl_http_client_group.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hb {

absl::StatusOr<std::unique_ptr<CurlHttpClientGroup>> CurlHttpClientGroup::Create(
    const CurlHttpClientOptions& options, int loops) {
  if (loops < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("an HTTP client needs at least one event loop, not ", loops));
  }
  CurlHttpClientOptions each = options;
  each.max_in_flight = (std::max(1, options.max_in_flight) + loops - 1) / loops;
  std::vector<std::unique_ptr<CurlMultiHttpClient>> started;
  for (int i = 0; i < loops; ++i) {
    absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> loop = CurlMultiHttpClient::Create(each);
    if (!loop.ok()) return loop.status();
    started.push_back(*std::move(loop));
  }
  return std::unique_ptr<CurlHttpClientGroup>(new CurlHttpClientGroup(std::move(started)));
}

// A call's id is its loop's id times the number of loops plus the loop's index (never 0: a
// loop's ids start at 1).
HttpClient::CallId CurlHttpClientGroup::Post(HttpRequest request, HttpCallback done) {
  const uint64_t n = loops_.size();
  const uint64_t index = next_.fetch_add(1, std::memory_order_relaxed) % n;
  return loops_[index]->Post(std::move(request), std::move(done)) * n + index;
}

void CurlHttpClientGroup::Cancel(CallId id) {
  if (id == 0) return;
  const uint64_t n = loops_.size();
  loops_[id % n]->Cancel(id / n);
}

Scheduler::TimerId CurlHttpClientGroup::Schedule(absl::Duration delay,
                                                 absl::AnyInvocable<void()> fn) {
  return loops_.front()->Schedule(delay, std::move(fn));
}

bool CurlHttpClientGroup::CancelTimer(TimerId id) { return loops_.front()->CancelTimer(id); }

CurlHttpClientStats CurlHttpClientGroup::stats() const {
  CurlHttpClientStats total;
  for (const auto& loop : loops_) {
    const CurlHttpClientStats s = loop->stats();
    total.requests_started += s.requests_started;
    total.requests_completed += s.requests_completed;
    total.connections_opened += s.connections_opened;
    total.in_flight += s.in_flight;
    total.queued += s.queued;
    total.timers_pending += s.timers_pending;
  }
  return total;
}

}  // namespace hb
