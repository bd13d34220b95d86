// HttpServer: the one HTTP listener of the project (hb-env's ORS and trainer routes, hb-llm-sim):
// bind, N libevent loops sharing the listening socket, every request read through BoundedEvhttp
// (http/bounded_evhttp.h), dispatched through one HttpRouteTable, answered through one writer.
//
// A binary registers rows {method, path, handler} into an HttpRouteTable and serves it; the
// request fuzzer (fuzz/http_request_fuzzer.cc) drives the same table without sockets. Adding a
// route is one row and one handler.
//
// Paths: exact ("/health"), with '*' standing for one non-empty segment ("/*/tasks", the
// segment handed to the handler in `params`), or a prefix (HttpRoute::prefix: "/" is every
// path). The first row whose path matches and whose method is the request's wins; a path some
// row matches with another method is 405 with `Allow` naming the rows' methods; no match is 404.
// Both answer the table's error body ({"detail": "Not Found"} by default).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "http/bounded_evhttp.h"

struct evhttp_request;
struct event_base;

namespace hb {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// A complete request as a handler sees it. The views are valid during the handler call only.
struct HttpServerRequest {
  absl::string_view method = "GET";  // "GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"
  absl::string_view path = "/";      // without the query; "/" when the request names none
  absl::string_view body;
  std::vector<std::pair<absl::string_view, absl::string_view>> headers;  // in arrival order
  std::vector<absl::string_view> params;  // the segments the route's '*'s matched, in order

  // The first header named `name` (case-insensitive); empty when there is none.
  absl::string_view Header(absl::string_view name) const;
};

// The one response writer. A request is answered exactly once: by Reply(), or by a handler
// that keeps the libevent request (raw()) or a Defer()red exchange and answers later on the
// loop thread.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // Writes the whole response: status, `headers` (Content-Length is added), `body`.
  virtual void Reply(int status, const HttpHeaders& headers, absl::string_view body) = 0;
  // An exchange that outlives the handler, to Reply() later on the loop thread (a reply to a
  // client that went away is dropped).
  virtual std::unique_ptr<HttpExchange> Defer() = 0;
  // The libevent request for streams, timers and connection events; null when the table is
  // driven without a server (tests, the fuzzer).
  virtual evhttp_request* raw() const = 0;
};

// The writer over a libevent request (not owned; libevent frees it once answered).
class EvhttpExchange final : public HttpExchange {
 public:
  explicit EvhttpExchange(evhttp_request* req) : req_(req) {}
  void Reply(int status, const HttpHeaders& headers, absl::string_view body) override;
  std::unique_ptr<HttpExchange> Defer() override;
  evhttp_request* raw() const override { return req_; }

 private:
  evhttp_request* req_;
};

// Streamed responses (server-sent events): the head now, chunks as they come, then the end.
void StartHttpStream(evhttp_request* req, int status, const HttpHeaders& headers);
void SendHttpChunk(evhttp_request* req, absl::string_view data);
void EndHttpStream(evhttp_request* req);

using HttpHandler = std::function<void(const HttpServerRequest&, HttpExchange&)>;

struct HttpRoute {
  std::string method;  // "GET", "POST", ...; "*" is any method
  std::string path;    // see the file comment
  HttpHandler handler;
  bool prefix = false;
  // What the route is called in logs and metrics (empty: unnamed).
  std::string name;
};

class HttpRouteTable {
 public:
  // Runs before the route's handler, with the row whose path matched (null: none); returns
  // false when it answered the request itself (a refused token).
  using Gate = std::function<bool(const HttpServerRequest&, HttpExchange&, const HttpRoute* route)>;

  // `error_body` shapes the 404 and 405 answers (empty: {"detail": message}).
  explicit HttpRouteTable(HttpErrorBody error_body = {});

  void Add(HttpRoute route);
  void SetGate(Gate gate) { gate_ = std::move(gate); }

  struct Match {
    const HttpRoute* route = nullptr;     // the row to run; null: 404 or 405
    const HttpRoute* path_row = nullptr;  // the first row whose path matched (any method)
    std::string allow;                    // for a 405: the methods the path's rows take
    std::vector<absl::string_view> params;
  };
  Match Find(absl::string_view method, absl::string_view path) const;

  // Gate, then the matched row's handler with `request.params` filled, or the 404/405 answer.
  // Not thread-safe against Add; concurrent Dispatch calls are (the table is read-only).
  void Dispatch(HttpServerRequest& request, HttpExchange& exchange) const;

  const HttpErrorBody& error_body() const { return error_body_; }

 private:
  HttpErrorBody error_body_;
  std::vector<HttpRoute> routes_;
  Gate gate_;
};

struct HttpServerOptions {
  // HOST:PORT (common/base/host_port.h); port 0 picks a free port (see port()). An empty host
  // (":8080") is `empty_host`.
  std::string listen = "127.0.0.1:0";
  // What bind errors name ("--listen").
  std::string listen_name = "listen address";
  // The host an empty one stands for ("" lets getaddrinfo choose every interface).
  std::string empty_host;
  // Event loops accepting on the one socket, each on its own thread.
  int threads = 1;
  // Every request's limits (CheckHttpServerLimits); their refusals use the table's error body.
  HttpServerLimits limits;
  // Methods evhttp passes on; others get libevent's 405.
  std::vector<std::string> methods = {"GET", "POST", "HEAD", "PUT", "DELETE"};
  // Timers fire on time (a latency simulator) instead of on libevent's coarse clock.
  bool precise_timers = false;
};

class HttpServer {
 public:
  // Binds `options.listen` and sets up the loops; serves nothing before Start(). `routes` is
  // not owned and must outlive the server. kInvalidArgument for a malformed address or limits
  // (naming options.listen_name), kUnavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Bind(HttpServerOptions options,
                                                          const HttpRouteTable* routes);

  // The bound port (the real one when the address asked for 0).
  int port() const { return port_; }
  // Loop `i`'s event_base, for timers and events of the binary's own (free them before the
  // server is destroyed).
  event_base* base(int i) const;
  int threads() const { return static_cast<int>(loops_.size()); }

  // Starts one thread per loop; `on_start(i)` runs first on loop i's thread (may be empty).
  void Start(std::function<void(int)> on_start = {});
  // Asks every loop to stop once its current callbacks return. Thread-safe, idempotent; any
  // thread (a signal watcher too).
  void Stop();
  // Joins the loop threads (after Stop()). Not from a loop thread.
  void Wait();

  // Stops, joins, then closes every connection (their close callbacks run on this thread) and
  // frees the loops.
  ~HttpServer();

 private:
  struct Loop;
  HttpServer(const HttpRouteTable* routes, int port);
  static void OnRequest(evhttp_request* req, void* arg);

  const HttpRouteTable* routes_;
  int port_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> workers_;
};

}  // namespace hb
