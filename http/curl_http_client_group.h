// CurlHttpClientGroup: HttpClient and Scheduler over several CurlMultiHttpClient event loops,
// one thread each. One loop thread drives libcurl, parses every reply and runs every
// completion callback (about 50 us of CPU per grader call, so some 20,000 calls/s on one
// core); a grader with more traffic than that and cores to spare spreads requests over `loops`
// loops (round robin), so completions run on as many threads. With one loop it is exactly a
// CurlMultiHttpClient.
//
//   CurlHttpClientOptions options;  // max_in_flight is the group's total
//   absl::StatusOr<std::unique_ptr<CurlHttpClientGroup>> http =
//       CurlHttpClientGroup::Create(options, /*loops=*/2);
//
// Contract for callers, beyond HttpClient's and Scheduler's: request callbacks may run on any
// of the loop threads, concurrently with each other, so what they touch must be thread-safe
// (with one loop they ran one at a time). Timers all run on the first loop's thread. Each loop
// has its own connections, queue and in-flight bound (max_in_flight divided among the loops,
// rounded up). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "http/curl_http_client.h"

namespace hb {

class CurlHttpClientGroup final : public HttpClient, public Scheduler {
 public:
  // Starts `loops` (>= 1) loops; kInvalidArgument for loops < 1, or Create's error.
  static absl::StatusOr<std::unique_ptr<CurlHttpClientGroup>> Create(
      const CurlHttpClientOptions& options, int loops);

  // Stops every loop as ~CurlMultiHttpClient does. Must not be called from a callback.
  ~CurlHttpClientGroup() override = default;

  CallId Post(HttpRequest request, HttpCallback done) override;
  void Cancel(CallId id) override;
  TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  bool CancelTimer(TimerId id) override;

  int loops() const { return static_cast<int>(loops_.size()); }
  // The loops' counters added up.
  CurlHttpClientStats stats() const;

 private:
  explicit CurlHttpClientGroup(std::vector<std::unique_ptr<CurlMultiHttpClient>> loops)
      : loops_(std::move(loops)) {}

  const std::vector<std::unique_ptr<CurlMultiHttpClient>> loops_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace hb
