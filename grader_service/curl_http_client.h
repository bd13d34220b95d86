// CurlMultiHttpClient: HttpClient and Scheduler on one libcurl multi event loop.
//
// One thread runs curl_multi_poll; other threads submit requests, cancellations and timers
// through a mutex-protected queue and wake it with curl_multi_wakeup. Connections are kept
// alive and reused (the multi handle's connection cache is sized for the configured number of
// requests in flight); HTTP/2 is negotiated over TLS and streams are multiplexed when the
// server offers it. TLS peers are verified by default. Request and timer callbacks run on the
// loop thread and must not block.
//
// This is the only target that links libcurl.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "grader_service/http_client.h"
#include "grader_service/scheduler.h"

namespace hb {

struct CurlHttpClientOptions {
  // Requests handed to libcurl at once; more wait in a queue (their timeout starts when they
  // leave it).
  int max_in_flight = 2048;
  // Connections per host (0: no limit beyond max_in_flight). With HTTP/1.1 every request in
  // flight needs its own connection.
  int max_host_connections = 0;
  // Idle connections kept for reuse (0: max_in_flight).
  int max_cached_connections = 0;
  // HTTP/2 streams per connection.
  int max_concurrent_streams = 256;
  absl::Duration connect_timeout = absl::Seconds(10);
  // Verify the TLS peer and host name (never turn off outside tests).
  bool verify_tls = true;
  // Optional CA bundle path; empty uses the system store.
  std::string ca_file;
  std::string user_agent = "hb-grader/0.1";
  // Clock for timers and latency; Clock::Real() when null. Not owned.
  Clock* clock = nullptr;
};

// Counters for tests and metrics; a snapshot.
struct CurlHttpClientStats {
  int64_t requests_started = 0;
  int64_t requests_completed = 0;
  // New TCP connections libcurl opened (fewer than requests means connections were reused).
  int64_t connections_opened = 0;
  int64_t in_flight = 0;
  int64_t queued = 0;
  int64_t timers_pending = 0;
};

class CurlMultiHttpClient final : public HttpClient, public Scheduler {
 public:
  // Starts the loop thread. kInternal when libcurl cannot be initialised.
  static absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> Create(
      const CurlHttpClientOptions& options);

  // Stops the loop, completes every unfinished request with kCancelled ("HTTP client shut
  // down") and runs every pending timer at once, on the destroying thread. Must not be called
  // from a callback.
  ~CurlMultiHttpClient() override;

  CallId Post(HttpRequest request, HttpCallback done) override;
  void Cancel(CallId id) override;
  TimerId Schedule(absl::Duration delay, absl::AnyInvocable<void()> fn) override;
  bool CancelTimer(TimerId id) override;

  CurlHttpClientStats stats() const;

  struct Transfer;  // one request in progress (curl_http_client.cc)

 private:
  CurlHttpClientOptions options_;
  Clock& clock_;
  void* multi_ = nullptr;  // CURLM*, owned

  explicit CurlMultiHttpClient(const CurlHttpClientOptions& options);
  void Loop();
  void StartWaiting();
  void DrainCompleted();
  void RunDueTimers();
  void CancelTransfer(CallId id);
  void Finish(std::unique_ptr<Transfer> transfer, absl::StatusOr<HttpResponse> result);
  void AddHandle(std::unique_ptr<Transfer> transfer);

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CallId next_call_id_ ABSL_GUARDED_BY(mu_) = 0;
  TimerId next_timer_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Transfer>> submitted_ ABSL_GUARDED_BY(mu_);
  std::vector<CallId> cancelled_ ABSL_GUARDED_BY(mu_);
  // (due, id) -> callback; timer_due_ maps id -> due for CancelTimer.
  std::map<std::pair<absl::Time, TimerId>, absl::AnyInvocable<void()>> timers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TimerId, absl::Time> timer_due_ ABSL_GUARDED_BY(mu_);
  CurlHttpClientStats stats_ ABSL_GUARDED_BY(mu_);

  // Loop thread only.
  std::deque<std::unique_ptr<Transfer>> waiting_;
  absl::flat_hash_map<CallId, std::unique_ptr<Transfer>> active_;

  std::thread thread_;
};

}  // namespace hb
