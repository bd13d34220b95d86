// CurlMultiHttpClient: HttpClient and Scheduler on one libcurl multi event loop.
//
// One thread runs an epoll loop driving libcurl's socket interface (curl_multi_socket_action
// with CURLMOPT_SOCKETFUNCTION/TIMERFUNCTION), so each wakeup costs in proportion to the
// sockets that are ready rather than to the number of requests in flight. Other threads submit
// requests, cancellations and timers through a mutex-protected queue and wake the loop through
// an eventfd (written only when the loop is not already due to look). Requests are spread over
// a few multi handles (see transfers_per_multi), all on that one thread. Connections are kept
// alive and reused (the connection caches together are sized for the configured number of
// requests in flight); HTTP/2 is negotiated over TLS and streams are multiplexed when the
// server offers it. TLS peers are verified by default. Only http:// and https:// URLs are
// accepted and redirects are never followed (a 3xx comes back as a response). Request and timer
// callbacks run on the loop thread and must not block.
//
// Plain http:// requests skip libcurl: they go through PlainHttp1Pool (http/plain_http1.h) on
// the same loop, unless CurlHttpClientOptions::plain_http1 is off or a proxy is set in the
// environment. This is the only target that links libcurl.
#pragma once

#include <atomic>
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
#include "common/base/scheduler.h"
#include "http/http_client.h"
#include "http/plain_http1.h"

namespace hb {

struct CurlHttpClientOptions {
  // Requests handed to libcurl at once; more wait in a queue (their timeout starts when they
  // leave it).
  int max_in_flight = 2048;
  // Requests in flight per libcurl multi handle. libcurl 7.88 walks a multi handle's whole
  // connection cache once or twice per request (looking for an idle connection, and again on
  // removal), which at thousands of HTTP/1.1 connections costs more than the request itself;
  // so max_in_flight is spread over ceil(max_in_flight / transfers_per_multi) multi handles (at
  // most 16), each with its own connection cache, all on the one loop thread. A request goes
  // to the multi handle with the fewest requests in flight (the first on ties, so a lightly
  // loaded client uses one connection cache). 0: one multi handle.
  int transfers_per_multi = 256;
  // Connections per host (0: no limit beyond max_in_flight). With HTTP/1.1 every request in
  // flight needs its own connection. With several multi handles each gets the limit divided
  // by their number, rounded up.
  int max_host_connections = 0;
  // Connections kept for reuse (0: max_in_flight), divided among the multi handles like
  // max_host_connections.
  int max_cached_connections = 0;
  // HTTP/2 streams per connection.
  int max_concurrent_streams = 256;
  // libcurl's receive buffer per request (CURLOPT_BUFFERSIZE, clamped to [1 KiB, 512 KiB]),
  // allocated when the request starts and held until it ends. A chat completion reply with its
  // headers fits in 4 KiB; bigger ones take more reads, not more memory. libcurl's default,
  // 16 KiB, is 24 MB more at 2,000 in flight.
  int receive_buffer_bytes = 4 * 1024;
  // Largest response body kept, after decompression (libcurl inflates gzip/deflate before the
  // body reaches us, so a small compressed body that inflates past this is cut off too). A
  // larger body ends the request with kFailedPrecondition naming the limit: a chat completion
  // capped at max_tokens is a few KiB, so a bigger answer is a misconfigured or hostile
  // endpoint, and retrying would pay for it again.
  size_t max_response_body_bytes = 8 << 20;
  absl::Duration connect_timeout = absl::Seconds(10);
  // Verify the TLS peer and host name (never turn off outside tests).
  bool verify_tls = true;
  // Optional CA bundle path; empty uses the system store.
  std::string ca_file;
  std::string user_agent = "hb-grader/0.1";
  // Send http:// requests (bodies in memory, no proxy in the environment) through
  // PlainHttp1Pool rather than libcurl: the same requests and answers at about half the CPU
  // (BENCHMARKS.md). https:// always goes through libcurl. Off: libcurl for everything. Of the
  // options above, that path uses max_in_flight, max_cached_connections (its idle
  // connections), max_response_body_bytes, connect_timeout and user_agent; the rest are
  // libcurl's (it reads with one 64 KiB buffer and opens a connection per request in flight).
  bool plain_http1 = true;
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
  struct Shard;  // one CURLM* with its libcurl timer (curl_http_client.cc)
  std::vector<std::unique_ptr<Shard>> shards_;  // fixed after Create
  int epoll_fd_ = -1;                           // owned
  int wake_fd_ = -1;                            // eventfd, owned

  explicit CurlMultiHttpClient(const CurlHttpClientOptions& options);
  // libcurl callbacks (CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION) with the Shard as
  // user data; loop thread (or the destructor, after the loop has stopped) only.
  static int OnSocket(void* easy, int fd, int what, void* shard, void* socket_data);
  static int OnCurlTimer(void* multi, long timeout_ms, void* shard);
  // After queueing work under mu_: true (and marks a wakeup pending) when the caller must call
  // Wake() once it has released mu_; false when a wakeup is already pending or the caller is
  // the loop thread (which re-reads the queues before it sleeps).
  bool NeedsWakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the eventfd.
  void Wake();
  void Loop();
  // Takes the submitted and cancelled queues; false when stopping.
  bool TakeQueues();
  // curl_multi_socket_action on one socket (or CURL_SOCKET_TIMEOUT) then DrainCompleted.
  void SocketAction(Shard& shard, int fd, int events);
  void StartWaiting();
  void DrainCompleted(Shard& shard);
  void RunDueTimers();
  void CancelTransfer(CallId id);
  // Hands `transfer`'s easy handle (no longer in a multi handle) back to spare_easies_, then
  // calls its callback with `result`. Loop thread only.
  void Finish(std::unique_ptr<Transfer> transfer, absl::StatusOr<HttpResponse> result);
  void AddHandle(std::unique_ptr<Transfer> transfer);
  // AddHandle for a request PlainHttp1Pool takes, and that pool's completion.
  void StartPlain(std::unique_ptr<Transfer> transfer);
  void FinishPlain(CallId id, absl::StatusOr<HttpResponse> result, int connections_opened);

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CallId next_call_id_ ABSL_GUARDED_BY(mu_) = 0;
  TimerId next_timer_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Transfer>> submitted_ ABSL_GUARDED_BY(mu_);
  std::vector<CallId> cancelled_ ABSL_GUARDED_BY(mu_);
  // (due, id) -> callback; timer_due_ maps id -> due for CancelTimer.
  std::map<std::pair<absl::Time, TimerId>, absl::AnyInvocable<void()>> timers_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TimerId, absl::Time> timer_due_ ABSL_GUARDED_BY(mu_);
  // Counters (relaxed atomics: the loop updates them without taking mu_).
  std::atomic<int64_t> requests_started_{0};
  std::atomic<int64_t> requests_completed_{0};
  std::atomic<int64_t> connections_opened_{0};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> queued_{0};
  // An eventfd write is outstanding that the loop has not consumed yet.
  bool wake_pending_ ABSL_GUARDED_BY(mu_) = false;
  // Set when the loop starts.
  std::thread::id loop_thread_id_ ABSL_GUARDED_BY(mu_);

  // Loop thread only.
  // By fd: 1 when libcurl has stopped watching the socket (CURL_POLL_REMOVE) but it is left
  // in the epoll set; may be stale for a socket closed since (it left the set by itself).
  std::vector<uint8_t> parked_;
  std::deque<std::unique_ptr<Transfer>> waiting_;
  absl::flat_hash_map<CallId, std::unique_ptr<Transfer>> active_;
  // Easy handles (CURL*; curl.h's CURL is void) of finished transfers, reset and kept for the
  // next ones: a curl_easy_init and curl_easy_cleanup per request were a measurable share of the
  // grading loop. At most as many as transfers were ever active at once; freed by the destructor.
  std::vector<void*> spare_easies_;
  // Plain http:// requests (null when options_.plain_http1 is off or a proxy is configured).
  std::unique_ptr<PlainHttp1Pool> plain_;

  std::thread thread_;
};

}  // namespace hb
