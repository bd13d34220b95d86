// BoundedEvhttp: bounds what a client can make a libevent evhttp server hold, enforced while
// the request is read, for every HTTP listener of the project (hb-env's ORS API, hb-llm-sim,
// the loopback servers of the tests). It lives in http/ (beside the client seam) because it is
// HTTP transport shared by environment/ and simulator/, which both sit above http/ in the
// layering; it depends only on libevent and common/base.
//
// Why not evhttp alone (libevent 2.1.12, Debian 12): evhttp_set_max_headers_size bounds the
// head while reading but answers with libevent's HTML 413 page; evhttp_set_max_body_size
// answers HTML 413 and resets the connection when the body is over twice the limit (without
// EVHTTP_SERVER_LINGERING_CLOSE); there is no limit on the number of header lines nor on the
// request line alone; evhttp_set_timeout is a per-read idle timeout, so a client that trickles
// one byte every few seconds is never timed out; and 2.1 has no evhttp_set_newreqcb nor
// evhttp_set_errorcb (2.2 only) through which to answer differently. An incomplete header line
// is also rescanned from its start on every read (evbuffer_readln), quadratic in its length.
//
// Mechanism: evhttp_set_bevcb gives every accepted connection a bufferevent filter in front of
// evhttp. The filter reads the request head itself (linearly: each byte is scanned once) and
// hands evhttp only complete heads within the limits, then exactly Content-Length body bytes;
// the head is never buffered past max_header_bytes. A request over a limit is answered by the
// filter with a JSON error and `Connection: close`, written straight to the socket:
//   414  request line over max_request_line_bytes
//   431  head over max_header_bytes, or more than max_header_count header lines
//   413  Content-Length over max_body_bytes (answered before the body is read)
//   411  a Transfer-Encoding body (chunked bodies are not accepted: send Content-Length)
//   400  malformed or conflicting Content-Length
//   408  the request (head and body) did not arrive whole within max_request_time of its first
//        byte, however slowly it trickles
// After the answer is written the socket's write side is shut down and what the client still
// sends is read and discarded (never buffered) for at most `linger`, so that the client reads
// the answer instead of a reset; then the connection is closed. evhttp's own limits stay set,
// a little above these, as a backstop. A connection with no byte in either direction for
// idle_timeout is closed. Do not also call evhttp_set_timeout: libevent 2.1.12 leaves a freed
// filter's timeout timer in the event heap (use after free, seen under valgrind).
//
// Memory: a connection holds at most max_header_bytes of head plus one socket read (16 KB)
// beyond what evhttp holds for a request within the limits. When connections that together
// buffered more than trim_after_bytes have closed, the allocator is asked to return free memory
// to the system (malloc_trim), so that RSS goes back down after a burst of hostile clients.
//
// Threading: one BoundedEvhttp per evhttp (per event loop); every callback runs on that
// loop's thread. Counters are atomics, readable from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/rate_limited_log.h"

struct evhttp;

namespace hb {

struct HttpServerLimits {
  size_t max_request_line_bytes = 8 << 10;
  // The whole head: request line, header lines and line ends.
  size_t max_header_bytes = 64 << 10;
  size_t max_header_count = 100;
  size_t max_body_bytes = 4 << 20;
  // From the first byte of a request to its last body byte.
  absl::Duration max_request_time = absl::Seconds(30);
  // A connection with no traffic either way for this long is closed (keep-alive, slow reader;
  // an open event stream stays alive by its pings).
  absl::Duration idle_timeout = absl::Seconds(60);
  // How long input is drained after an error answer before the connection is closed.
  absl::Duration linger = absl::Seconds(2);
  // malloc_trim after closed connections buffered this many bytes in total (0: never).
  size_t trim_after_bytes = 16 << 20;
};

// kInvalidArgument naming the field when a limit is 0 or the request line limit exceeds the
// head limit.
absl::Status CheckHttpServerLimits(const HttpServerLimits& limits);

// The JSON body of an error answer for `status` with `message`; the default is
// {"detail": message} (the ORS/FastAPI shape).
using HttpErrorBody = std::function<std::string(int status, absl::string_view message)>;

class BoundedEvhttp {
 public:
  struct Counters {
    std::atomic<int64_t> connections{0};  // open now
    std::atomic<int64_t> rejected{0};     // answered with an error by the filter, in total
    std::atomic<int64_t> timed_out{0};    // of which 408
    std::atomic<int64_t> trims{0};        // malloc_trim calls
    // sendmsg calls that wrote bytes (answers and error answers), in total. A response the
    // socket takes whole leaves in ONE call, its head and body together: written apart, the
    // body's small segment waits behind Nagle for the head's ACK, which a client that delays
    // its ACKs holds for ~40 ms (tests count this to keep it so).
    std::atomic<int64_t> sends{0};
  };

  // Installs the filter on `http` (evhttp_set_bevcb) and evhttp's backstop limits. `http` is
  // not owned; this object must outlive it and its event_base (free both first: a freed
  // connection's filter is finalized by its event_base). Limits must pass
  // CheckHttpServerLimits. `error_body` empty: {"detail": message}.
  BoundedEvhttp(evhttp* http, HttpServerLimits limits, HttpErrorBody error_body = {});
  BoundedEvhttp(const BoundedEvhttp&) = delete;
  BoundedEvhttp& operator=(const BoundedEvhttp&) = delete;

  const HttpServerLimits& limits() const { return limits_; }
  const Counters& counters() const { return counters_; }

  class Connection;

 private:
  friend class Connection;
  // A closed connection had buffered `bytes`; trims when enough were released.
  void Released(size_t bytes);
  const HttpServerLimits limits_;
  const HttpErrorBody error_body_;
  Counters counters_;
  // Rejections are logged at most 5 per 10 s per status (clients cause them).
  RateLimitedLog log_;
  // Bytes buffered by connections closed since the last trim (loop thread only).
  size_t released_bytes_ = 0;
};

// The request framing of the filter without sockets (tests and the fuzzer drive it directly).
// Not thread-safe.
class HttpRequestFramer {
 public:
  enum class Phase {
    kIdle,      // between requests: no byte of the next one yet
    kHead,      // reading a head
    kBody,      // passing body_left() more body bytes
    kRejected,  // over a limit: error_status() and error_message() say which
  };

  explicit HttpRequestFramer(const HttpServerLimits& limits) : limits_(limits) {}

  // In kIdle or kHead: consumes bytes of `data` up to the end of the head (or all of them) and
  // returns how many. When the head is complete, TakeHead() returns it and the phase is kBody
  // (a body follows) or kIdle. Blank lines before a request line are skipped, as RFC 9112
  // allows. May turn kRejected.
  size_t ConsumeHead(absl::string_view data);
  // In kBody: `n` <= body_left() body bytes were passed on; kIdle after the last one.
  void ConsumeBody(size_t n);
  // Whether a complete head waits for TakeHead().
  bool head_ready() const { return head_ready_; }
  // The complete head (request line to the blank line), once; empties the framer's copy.
  std::string TakeHead();

  Phase phase() const { return phase_; }
  size_t body_left() const { return body_left_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // Bytes of head currently buffered.
  size_t buffered() const { return head_.size(); }

 private:
  void Reject(int status, std::string message);
  // At the end of the head: the body length from Content-Length / Transfer-Encoding.
  void EndHead();
  // A complete line of the head (without its line end).
  void Line(absl::string_view line);

  const HttpServerLimits& limits_;
  bool head_ready_ = false;
  Phase phase_ = Phase::kIdle;
  std::string head_;
  size_t line_start_ = 0;  // offset in head_ of the line being read
  bool have_request_line_ = false;
  size_t header_count_ = 0;
  std::string method_;
  size_t body_left_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

// "HTTP/1.1 <status> <reason>" answer with a JSON body and Connection: close (exposed for tests
// and the fuzzer).
std::string HttpErrorResponse(int status, absl::string_view json_body);

}  // namespace hb
