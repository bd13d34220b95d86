#include "http/http_server.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/host_port.h"
#include "common/base/json.h"

namespace hb {
namespace {

std::string DetailBody(int /*status*/, absl::string_view message) {
  return absl::StrCat("{\"detail\":", JsonQuote(message), "}");
}

void AddHeaders(evhttp_request* req, const HttpHeaders& headers) {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  for (const auto& [name, value] : headers) evhttp_add_header(out, name.c_str(), value.c_str());
}

// Whether `path` matches the '*' pattern `want` segment by segment (a '*' is one non-empty
// segment); the matched segments go to `params` when it is not null. Allocates nothing else.
bool SegmentsMatch(absl::string_view want, absl::string_view path,
                   std::vector<absl::string_view>* params) {
  while (true) {
    const size_t want_end = want.find('/');
    const size_t path_end = path.find('/');
    const absl::string_view want_segment = want.substr(0, want_end);
    const absl::string_view path_segment = path.substr(0, path_end);
    if (want_segment == "*") {
      if (path_segment.empty()) return false;
      if (params != nullptr) params->push_back(path_segment);
    } else if (want_segment != path_segment) {
      return false;
    }
    if ((want_end == absl::string_view::npos) != (path_end == absl::string_view::npos)) {
      return false;
    }
    if (want_end == absl::string_view::npos) return true;
    want.remove_prefix(want_end + 1);
    path.remove_prefix(path_end + 1);
  }
}

// Whether `path` matches `route`'s path; fills `params` with the segments its '*'s matched.
bool PathMatches(const HttpRoute& route, absl::string_view path,
                 std::vector<absl::string_view>* params) {
  if (route.prefix) return absl::StartsWith(path, route.path);
  if (!absl::StrContains(route.path, '*')) return path == route.path;
  if (!SegmentsMatch(route.path, path, nullptr)) return false;
  params->clear();
  return SegmentsMatch(route.path, path, params);
}

const char* MethodName(evhttp_cmd_type cmd) {
  switch (cmd) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_OPTIONS:
      return "OPTIONS";
    default:
      return "OTHER";
  }
}

absl::StatusOr<ev_uint16_t> MethodMask(const std::vector<std::string>& methods) {
  ev_uint16_t mask = 0;
  for (const std::string& method : methods) {
    bool known = false;
    for (evhttp_cmd_type cmd : {EVHTTP_REQ_GET, EVHTTP_REQ_POST, EVHTTP_REQ_HEAD, EVHTTP_REQ_PUT,
                                EVHTTP_REQ_DELETE, EVHTTP_REQ_OPTIONS}) {
      if (method == MethodName(cmd)) {
        mask |= cmd;
        known = true;
      }
    }
    if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown HTTP method ", method));
  }
  return mask;
}

// Binds and listens (non-blocking, backlog 4096); the fd and the bound port, or kUnavailable.
absl::StatusOr<std::pair<int, int>> BindListener(const HttpServerOptions& options) {
  HostPortRules rules = ListenRules(options.listen_name);
  rules.empty_host_ok = true;
  absl::StatusOr<HostPort> address = ParseHostPort(options.listen, rules);
  if (!address.ok()) return address.status();
  const std::string host = address->host.empty() ? options.empty_host : address->host;
  const std::string port_text = std::to_string(address->port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res);
      rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, ": ", gai_strerror(rc)));
  }
  int fd = -1;
  int error = 0;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
      error = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen, ": ", std::strerror(error)));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = addr.ss_family == AF_INET6
                       ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                       : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return std::make_pair(fd, port);
}

}  // namespace

absl::string_view HttpServerRequest::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

void EvhttpExchange::Reply(int status, const HttpHeaders& headers, absl::string_view body) {
  AddHeaders(req_, headers);
  evbuffer_add(evhttp_request_get_output_buffer(req_), body.data(), body.size());
  evhttp_send_reply(req_, status, nullptr, nullptr);
}

std::unique_ptr<HttpExchange> EvhttpExchange::Defer() {
  return std::make_unique<EvhttpExchange>(req_);
}

void StartHttpStream(evhttp_request* req, int status, const HttpHeaders& headers) {
  AddHeaders(req, headers);
  evhttp_send_reply_start(req, status, nullptr);
}

void SendHttpChunk(evhttp_request* req, absl::string_view data) {
  evbuffer* buf = evbuffer_new();
  evbuffer_add(buf, data.data(), data.size());
  evhttp_send_reply_chunk(req, buf);
  evbuffer_free(buf);
}

void EndHttpStream(evhttp_request* req) { evhttp_send_reply_end(req); }

HttpRouteTable::HttpRouteTable(HttpErrorBody error_body)
    : error_body_(error_body ? std::move(error_body) : HttpErrorBody(DetailBody)) {}

void HttpRouteTable::Add(HttpRoute route) { routes_.push_back(std::move(route)); }

HttpRouteTable::Match HttpRouteTable::Find(absl::string_view method, absl::string_view path) const {
  Match match;
  std::vector<std::string> allow;
  for (const HttpRoute& route : routes_) {
    std::vector<absl::string_view> params;
    if (!PathMatches(route, path, &params)) continue;
    if (match.path_row == nullptr) match.path_row = &route;
    if (route.method == "*" || route.method == method) {
      match.route = &route;
      match.params = std::move(params);
      return match;
    }
    if (std::find(allow.begin(), allow.end(), route.method) == allow.end()) {
      allow.push_back(route.method);
    }
  }
  match.allow = absl::StrJoin(allow, ", ");
  return match;
}

void HttpRouteTable::Dispatch(HttpServerRequest& request, HttpExchange& exchange) const {
  Match match = Find(request.method, request.path);
  if (gate_ && !gate_(request, exchange, match.path_row)) return;
  if (match.route != nullptr) {
    request.params = std::move(match.params);
    return match.route->handler(request, exchange);
  }
  if (match.path_row != nullptr) {
    return exchange.Reply(405, {{"Allow", match.allow}, {"Content-Type", "application/json"}},
                          error_body_(405, "Method Not Allowed"));
  }
  exchange.Reply(404, {{"Content-Type", "application/json"}}, error_body_(404, "Not Found"));
}

struct HttpServer::Loop {
  event_base* base = nullptr;
  evhttp* http = nullptr;
  // Bounds every request (head, body, time); outlives `http` and `base`.
  std::unique_ptr<BoundedEvhttp> bounded;
};

HttpServer::HttpServer(const HttpRouteTable* routes, int port) : routes_(routes), port_(port) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Bind(HttpServerOptions options,
                                                             const HttpRouteTable* routes) {
  if (absl::Status valid = CheckHttpServerLimits(options.limits); !valid.ok()) return valid;
  absl::StatusOr<ev_uint16_t> methods = MethodMask(options.methods);
  if (!methods.ok()) return methods.status();
  static const int threads_ready = evthread_use_pthreads();
  if (threads_ready != 0) return absl::InternalError("evthread_use_pthreads failed");
  absl::StatusOr<std::pair<int, int>> bound = BindListener(options);
  if (!bound.ok()) return bound.status();
  const auto [fd, port] = *bound;
  std::unique_ptr<HttpServer> server(new HttpServer(routes, port));
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    auto loop = std::make_unique<Loop>();
    event_config* config = event_config_new();
    if (options.precise_timers) event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    loop->base = event_base_new_with_config(config);
    event_config_free(config);
    loop->http = loop->base != nullptr ? evhttp_new(loop->base) : nullptr;
    // Kept before the checks below: the destructor frees what was made.
    server->loops_.push_back(std::move(loop));
    Loop& made = *server->loops_.back();
    if (made.http == nullptr) {
      close(fd);
      return absl::InternalError("libevent: cannot create the HTTP server");
    }
    evhttp_set_gencb(made.http, OnRequest, server.get());
    made.bounded = std::make_unique<BoundedEvhttp>(made.http, options.limits, routes->error_body());
    evhttp_set_allowed_methods(made.http, *methods);
    // Each loop owns a duplicate of the one listening socket (libevent closes it on free).
    if (evhttp_accept_socket(made.http, dup(fd)) != 0) {
      close(fd);
      return absl::InternalError("libevent: evhttp_accept_socket failed");
    }
  }
  close(fd);
  return server;
}

event_base* HttpServer::base(int i) const { return loops_[i]->base; }

void HttpServer::OnRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<HttpServer*>(arg);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  evbuffer* in = evhttp_request_get_input_buffer(req);
  const size_t size = evbuffer_get_length(in);  // at most max_body_bytes (BoundedEvhttp)
  HttpServerRequest request;
  request.method = MethodName(evhttp_request_get_command(req));
  request.path = path == nullptr || *path == '\0' ? "/" : path;
  request.body = absl::string_view(
      size == 0 ? "" : reinterpret_cast<const char*>(evbuffer_pullup(in, -1)), size);
  const evkeyvalq* headers = evhttp_request_get_input_headers(req);
  for (const evkeyval* header = headers->tqh_first; header != nullptr;
       header = header->next.tqe_next) {
    request.headers.emplace_back(header->key, header->value);
  }
  EvhttpExchange exchange(req);
  self->routes_->Dispatch(request, exchange);
}

void HttpServer::Start(std::function<void(int)> on_start) {
  for (size_t i = 0; i < loops_.size(); ++i) {
    workers_.emplace_back([this, i, on_start] {
      if (on_start) on_start(static_cast<int>(i));
      event_base_dispatch(loops_[i]->base);
    });
  }
}

void HttpServer::Stop() {
  // loopexit, not loopbreak: a stop asked before a loop starts is not forgotten.
  for (const auto& loop : loops_) event_base_loopexit(loop->base, nullptr);
}

void HttpServer::Wait() {
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

HttpServer::~HttpServer() {
  Stop();
  Wait();
  for (const auto& loop : loops_) {
    if (loop->http != nullptr) evhttp_free(loop->http);  // closes connections (close callbacks)
    // Runs the finalizers of the freed connections' bufferevents (BoundedEvhttp's filters).
    if (loop->base != nullptr) event_base_loop(loop->base, EVLOOP_NONBLOCK);
    if (loop->base != nullptr) event_base_free(loop->base);
    loop->bounded.reset();
  }
}

}  // namespace hb
