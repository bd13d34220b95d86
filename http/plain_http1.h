// PlainHttp1Pool: HTTP/1.1 over plain TCP without libcurl, driven by CurlMultiHttpClient's loop.
//
// CurlMultiHttpClient sends an http:// request through this pool rather than libcurl when
// CurlHttpClientOptions::plain_http1 is on (the default) and no proxy is set in the environment
// (see PlainHttp1Pool::Accepts). Why: a grader call to a model on the same network is a small
// JSON POST and a small JSON reply; libcurl's per-transfer machinery (URL parsing, option
// setting, connection-cache walks, header callbacks, a poll() per transfer) cost about half of
// the grading loop's CPU (BENCHMARKS.md). Here a request costs one sendmsg, usually one recv
// and no epoll_ctl on a reused connection. https:// (TLS, HTTP/2) always goes through libcurl.
//
// What it speaks: keep-alive connections per origin (host:port), one request at a time on each
// (no pipelining), at most `max_idle_connections` kept idle; `Host`, `User-Agent`, `Accept:
// */*` and `Content-Length` sent (a caller's own Host, User-Agent or Accept replaces ours; a
// header with an empty value is not sent, as libcurl does); no `Accept-Encoding` (a gzip or
// deflate body sent anyway is inflated, the body limit applying after inflation). Responses
// framed by Content-Length, chunked or end of connection; 1xx responses skipped; redirects
// returned, never followed. A request whose reused connection turns out closed by the server
// before any byte of the answer arrived is sent once more on a new connection (as libcurl does).
// Host names are resolved with getaddrinfo on the loop thread, at most once a minute per origin
// and again after a failed connect (an IP literal or an /etc/hosts name costs nothing).
//
// Errors, as HttpClient documents: kUnavailable (refused, reset, closed early, malformed
// response, name not resolved), kDeadlineExceeded (the request's timeout or the connect
// timeout), kInvalidArgument (malformed URL), kFailedPrecondition (body over its limit).
//
// Not thread-safe: every method runs on the owner's loop thread.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "http/http1_response_parser.h"
#include "http/http_client.h"

namespace hb {

struct PlainHttp1Options {
  std::chrono::milliseconds connect_timeout{10000};
  std::string user_agent;
  // Idle keep-alive connections kept over all origins; more are closed.
  size_t max_idle_connections = 2048;
};

class PlainHttp1Pool {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  // An exchange ended: its id, its outcome and how many connections it opened (0 on a reused
  // connection; 2 when a stale one was replaced). Runs on the loop thread from OnEvent or
  // ExpireDue, never from Start or Abort.
  using Done = absl::AnyInvocable<void(uint64_t id, absl::StatusOr<HttpResponse> result,
                                       int connections_opened)>;

  // Registers sockets in `epoll_fd` (not owned, must outlive the pool) with
  // epoll_event.data.u64 = (epoll_tag << 32) | fd; the owner hands those events to OnEvent.
  PlainHttp1Pool(int epoll_fd, uint32_t epoll_tag, PlainHttp1Options options, Done done);
  // Closes every connection; exchanges still in progress end without `done` (the owner
  // completes them).
  ~PlainHttp1Pool();
  PlainHttp1Pool(const PlainHttp1Pool&) = delete;
  PlainHttp1Pool& operator=(const PlainHttp1Pool&) = delete;

  // True for a request this pool can send: an http:// URL without user info, a body in memory
  // (no file part). Cheap; does not validate the rest of the URL (Start does).
  static bool Accepts(const HttpRequest& request);
  // True when the environment names a proxy libcurl would use for http:// URLs (http_proxy,
  // all_proxy or ALL_PROXY): the owner then leaves every request to libcurl.
  static bool ProxyInEnvironment();

  // Starts exchange `id` (unique among those in progress) for `request`, which must stay
  // alive and unchanged until `done` runs or Abort returns. An error known at once (malformed
  // URL, unresolvable host, refused connect) is returned and `done` is not called; `done` may
  // also run before Start returns (a send that failed at once).
  absl::Status Start(uint64_t id, const HttpRequest& request, size_t max_body_bytes,
                     SteadyTime deadline);
  // An epoll event for one of the pool's sockets.
  void OnEvent(int fd, uint32_t events);
  // Drops exchange `id` and closes its connection, without `done`; false when unknown.
  bool Abort(uint64_t id);
  // The earliest deadline of an exchange in progress, or SteadyTime::max().
  SteadyTime NextDeadline() const;
  // Ends every exchange whose deadline is at or before `now` with kDeadlineExceeded.
  void ExpireDue(SteadyTime now);

  size_t idle_connections() const { return idle_count_; }

  struct Conn;  // one TCP connection (plain_http1.cc)

 private:
  struct Address {
    sockaddr_storage addr{};
    socklen_t len = 0;
    SteadyTime resolved{};
  };

  absl::StatusOr<const Address*> Resolve(const std::string& host, const std::string& port,
                                         const std::string& origin);
  // Starts the exchange just placed on `conn` (its head, deadline, parser; then Send).
  void Begin(Conn& conn, size_t max_body_bytes);
  // Sends (the rest of) the exchange's request on `conn`; on failure `conn` is gone.
  void Send(Conn& conn);
  void OnReadable(Conn& conn);
  // Takes an idle connection to `origin` or opens one; error when none could be opened.
  absl::StatusOr<Conn*> Connection(const std::string& origin, const std::string& host,
                                   const std::string& port, int* opened);
  // The exchange on `conn` failed; retried on a fresh connection when the reused one turned
  // out closed before anything came back, else `done` runs with `status`.
  void Fail(Conn& conn, absl::Status status);
  void Complete(Conn& conn);
  void Release(Conn& conn);  // back to idle, or closed
  void Close(Conn& conn);    // removes and frees
  void Watch(Conn& conn, bool out);
  void SetDeadline(Conn& conn, SteadyTime deadline);

  const int epoll_fd_;
  const uint32_t epoll_tag_;
  const PlainHttp1Options options_;
  Done done_;
  // By fd.
  std::vector<std::unique_ptr<Conn>> conns_;
  absl::flat_hash_map<uint64_t, Conn*> busy_;
  absl::flat_hash_map<std::string, std::vector<Conn*>> idle_;
  size_t idle_count_ = 0;
  absl::flat_hash_map<std::string, Address> addresses_;
  std::set<std::pair<SteadyTime, Conn*>> deadlines_;
  std::unique_ptr<char[]> read_buffer_;
};

}  // namespace hb
