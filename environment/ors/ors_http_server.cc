#include "environment/ors/ors_http_server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/base/host_port.h"
#include "common/base/json.h"
#include "common/base/status_macros.h"
#include "environment/ors/ors_api.h"
#include "environment/ors/ors_session_manager.h"
#include "environment/ors/ors_wire.h"
#include "environment/trainer_api.h"
#include "security/transport_security.h"

namespace hb::env {
namespace {

// The listen address; an empty host (":8080") is every IPv4 interface.
absl::StatusOr<HostPort> ParseListen(absl::string_view listen) {
  HostPortRules rules = ListenRules("--http-listen");
  rules.empty_host_ok = true;
  HB_ASSIGN_OR_RETURN(HostPort parsed, ParseHostPort(listen, rules));
  if (parsed.host.empty()) parsed.host = "0.0.0.0";
  return parsed;
}

// Results and tasks handed to the loop thread. Shared with every Submit callback, so a callback
// that arrives after the server is gone finds `wake` null and drops its result.
struct Inbox {
  absl::Mutex mu;
  event* wake ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<std::pair<std::string, absl::StatusOr<SubmitResult>>> results ABSL_GUARDED_BY(mu);
  std::vector<absl::AnyInvocable<void()>> tasks ABSL_GUARDED_BY(mu);
  // The call whose Submit is running on the loop thread right now, and the result when its
  // callback ran inline (a rejection up front).
  std::thread::id loop_thread ABSL_GUARDED_BY(mu);
  std::string inline_call ABSL_GUARDED_BY(mu);
  std::optional<absl::StatusOr<SubmitResult>> inline_result ABSL_GUARDED_BY(mu);
};

// Runs `task` on the loop thread (through `inbox`); false (task dropped) once shut down.
bool PostTask(Inbox& inbox, absl::AnyInvocable<void()> task) {
  absl::MutexLock lock(&inbox.mu);
  if (inbox.wake == nullptr) return false;
  inbox.tasks.push_back(std::move(task));
  event_active(inbox.wake, 0, 0);
  return true;
}

// The trainer routes (TrainerApi), matched on the path without NeMo-Gym's /ng-rollout/<id>
// prefix; the path without its '/' labels their metrics.
enum class TrainerRoute {
  kGetReward,
  kReward,
  kSeedSession,
  kVerify,
  kAggregateMetrics,
  kReverifyMode
};
struct TrainerRouteInfo {
  absl::string_view path;
  TrainerRoute route;
  bool post;
  bool nemo_gym;
};
constexpr TrainerRouteInfo kTrainerRoutes[] = {
    {"/get_reward", TrainerRoute::kGetReward, true, false},
    {"/reward", TrainerRoute::kReward, true, false},
    {"/seed_session", TrainerRoute::kSeedSession, true, true},
    {"/verify", TrainerRoute::kVerify, true, true},
    {"/aggregate_metrics", TrainerRoute::kAggregateMetrics, true, true},
    {"/reverify_mode", TrainerRoute::kReverifyMode, false, true},
};

// The trainer route `path` names, or null. NeMo-Gym (with observability on) prefixes a
// resources server's paths with /ng-rollout/<rollout id>; its own middleware strips it.
const TrainerRouteInfo* FindTrainerRoute(absl::string_view path) {
  const bool prefixed = absl::ConsumePrefix(&path, "/ng-rollout/");
  if (prefixed) {
    const size_t slash = path.find('/');
    if (slash == 0 || slash == absl::string_view::npos) return nullptr;
    path.remove_prefix(slash);
  }
  for (const TrainerRouteInfo& info : kTrainerRoutes) {
    if (info.path == path && (info.nemo_gym || !prefixed)) return &info;
  }
  return nullptr;
}

// The request's X-Session-ID: kInvalidArgument when missing or not a well-formed id.
absl::StatusOr<std::string> SessionHeader(evhttp_request* req) {
  const char* sid = evhttp_find_header(evhttp_request_get_input_headers(req), "X-Session-ID");
  if (sid == nullptr) return absl::InvalidArgumentError("X-Session-ID header is required");
  std::string id(absl::StripAsciiWhitespace(sid));
  if (id.empty()) return absl::InvalidArgumentError("X-Session-ID header is required");
  if (absl::Status valid = CheckSessionId(id); !valid.ok()) return valid;
  return id;
}

void Send(evhttp_request* req, int code, absl::string_view content_type, absl::string_view body) {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Content-Type", std::string(content_type).c_str());
  evbuffer_add(evhttp_request_get_output_buffer(req), body.data(), body.size());
  evhttp_send_reply(req, code, nullptr, nullptr);
}

void SendJson(evhttp_request* req, absl::string_view body) {
  Send(req, 200, "application/json", body);
}

void SendError(evhttp_request* req, int code, absl::string_view message) {
  Send(req, code, "application/json", ErrorBody(message));
}

// 405 with the Allow header RFC 9110 requires: the one method `post` or GET serves the route.
void SendMethodNotAllowed(evhttp_request* req, bool post) {
  evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", post ? "POST" : "GET");
  SendError(req, 405, "Method Not Allowed");
}

void SendStatus(evhttp_request* req, const absl::Status& status) {
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After",
                      RetryAfterSeconds(status).c_str());
  }
  SendError(req, HttpStatusOf(status.code()), status.message());
}

void SendResult(evhttp_request* req, const absl::StatusOr<std::string>& body) {
  if (body.ok()) {
    SendJson(req, *body);
  } else {
    SendStatus(req, body.status());
  }
}

void AddSseHeaders(evhttp_request* req) {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "Content-Type", "text/event-stream");
  evhttp_add_header(out, "Cache-Control", "no-cache");
  evhttp_add_header(out, "X-Accel-Buffering", "no");
}

void SendSse(evhttp_request* req, absl::string_view events) {
  AddSseHeaders(req);
  evbuffer_add(evhttp_request_get_output_buffer(req), events.data(), events.size());
  evhttp_send_reply(req, 200, nullptr, nullptr);
}

// Appends `data` to a reply started with evhttp_send_reply_start.
void SendChunk(evhttp_request* req, absl::string_view data) {
  evbuffer* buf = evbuffer_new();
  evbuffer_add(buf, data.data(), data.size());
  evhttp_send_reply_chunk(req, buf);
  evbuffer_free(buf);
}

// False when the peer has closed its end: libevent does not read from a connection while its
// request waits for the reply, so it would only notice at the next failed write.
bool PeerAlive(evhttp_connection* conn) {
  bufferevent* bev = evhttp_connection_get_bufferevent(conn);
  const evutil_socket_t fd = bev != nullptr ? bufferevent_getfd(bev) : -1;
  char byte;
  const ssize_t n = fd < 0 ? 0 : recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

}  // namespace

class OrsHttpServer::Impl {
 public:
  Impl(Environment& env, Clock& clock, OrsServerOptions options)
      : env_(env),
        options_(std::move(options)),
        api_(env, options_.env_name),
        trainer_(env, options_.trainer, options_.metrics),
        sessions_(clock, {options_.session_idle_timeout, options_.call_linger,
                          options_.max_sessions, options_.max_finished_calls}) {}

  ~Impl() { Shutdown(); }

  absl::Status Listen();
  void Run() { event_base_dispatch(base_); }
  int port() const { return port_; }
  // Runs `task` on the loop thread; false (task dropped) once shut down. Thread-safe.
  bool Post(absl::AnyInvocable<void()> task);
  void RecordLoopThread() {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->loop_thread = std::this_thread::get_id();
  }
  void Shutdown();

  std::thread loop;
  OrsSessionManager& sessions() { return sessions_; }

 private:
  // An open call stream: the reply has started and waits for the call's result.
  struct Stream {
    Impl* server;
    evhttp_request* req;
    evhttp_connection* conn;
    std::string call_id;
  };

  static void OnRequest(evhttp_request* req, void* arg);
  static void OnWake(evutil_socket_t, short, void* arg);
  static void OnPingTimer(evutil_socket_t, short, void* arg);
  static void OnReapTimer(evutil_socket_t, short, void* arg);
  static void OnStreamClosed(evhttp_connection* conn, void* arg);

  void Route(evhttp_request* req, absl::string_view path, absl::string_view body);
  void RouteTrainer(evhttp_request* req, const TrainerRouteInfo& info, absl::string_view body);
  // Answers trainer request `id` (if its connection is still served) with `answer`.
  void AnswerTrainer(uint64_t id, const absl::StatusOr<std::string>& answer);
  void CountTrainerRequest(const TrainerRouteInfo& info, int http_code, absl::Duration latency);
  void RouteEnv(evhttp_request* req, absl::string_view route, absl::string_view body);
  void Create(evhttp_request* req, const std::string& sid, absl::string_view body);
  void Call(evhttp_request* req, const std::string& sid, const TaskRef& task,
            absl::string_view body);
  // Streams call `call_id`'s result to `req` (session `sid`'s calls only).
  void Attach(evhttp_request* req, const std::string& call_id, const std::string& sid);
  void Deliver(const std::string& call_id, absl::StatusOr<SubmitResult> result);
  void Finish(Stream* stream, const std::string& payload);
  void Forget(Stream* stream);
  std::string ResultEvents(const std::string& call_id, const std::string& payload) const;

  Environment& env_;
  const OrsServerOptions options_;
  OrsApi api_;
  TrainerApi trainer_;
  OrsSessionManager sessions_;
  std::shared_ptr<Inbox> inbox_ = std::make_shared<Inbox>();
  event_base* base_ = nullptr;
  evhttp* http_ = nullptr;
  // Freed after base_ (the connection filters, finalized with it, refer to it).
  std::unique_ptr<BoundedEvhttp> bounded_;
  event* wake_ = nullptr;
  event* ping_timer_ = nullptr;
  event* reap_timer_ = nullptr;
  int port_ = 0;
  // Every open stream, and the open streams of each running call.
  absl::flat_hash_set<Stream*> streams_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<Stream*>> waiters_;
  // Trainer requests waiting for their grading, by id: the request, its route and start.
  struct TrainerRequest {
    evhttp_request* req;
    const TrainerRouteInfo* info;
    absl::Time start;
  };
  absl::flat_hash_map<uint64_t, TrainerRequest> trainer_requests_;
  uint64_t next_trainer_request_ = 0;
};

absl::Status OrsHttpServer::Impl::Listen() {
  if (options_.sse_chunk_bytes < 8 || options_.max_body_bytes == 0) {
    return absl::InvalidArgumentError("sse_chunk_bytes must be >= 8 and max_body_bytes > 0");
  }
  if (options_.io_timeout <= options_.ping_interval) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_timeout (", absl::FormatDuration(options_.io_timeout),
                     ") must exceed ping_interval (", absl::FormatDuration(options_.ping_interval),
                     "): an open call stream is kept alive by its pings"));
  }
  auto address = ParseListen(options_.listen);
  if (!address.ok()) return address.status();
  static const int threads_ready = evthread_use_pthreads();
  if (threads_ready != 0) return absl::InternalError("evthread_use_pthreads failed");
  base_ = event_base_new();
  http_ = base_ != nullptr ? evhttp_new(base_) : nullptr;
  if (http_ == nullptr) return absl::InternalError("libevent: cannot create the HTTP server");
  evhttp_set_gencb(http_, OnRequest, this);
  HttpServerLimits limits = options_.http_limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.idle_timeout = options_.io_timeout;
  if (absl::Status valid = CheckHttpServerLimits(limits); !valid.ok()) return valid;
  bounded_ = std::make_unique<BoundedEvhttp>(http_, limits);
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                        EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
  evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, address->host.c_str(),
                                                              static_cast<uint16_t>(address->port));
  if (bound == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen, ": ", std::strerror(errno)));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  wake_ = event_new(base_, -1, 0, OnWake, this);
  ping_timer_ = event_new(base_, -1, EV_PERSIST, OnPingTimer, this);
  reap_timer_ = event_new(base_, -1, EV_PERSIST, OnReapTimer, this);
  const timeval ping = absl::ToTimeval(std::max(options_.ping_interval, absl::Microseconds(1)));
  const timeval reap = absl::ToTimeval(std::max(options_.reaper_period, absl::Microseconds(1)));
  evtimer_add(ping_timer_, &ping);
  evtimer_add(reap_timer_, &reap);
  absl::MutexLock lock(&inbox_->mu);
  inbox_->wake = wake_;
  return absl::OkStatus();
}

bool OrsHttpServer::Impl::Post(absl::AnyInvocable<void()> task) {
  return PostTask(*inbox_, std::move(task));
}

void OrsHttpServer::Impl::Shutdown() {
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->wake = nullptr;
  }
  // loopexit, not loopbreak: a break requested before the loop starts would be forgotten.
  if (base_ != nullptr) event_base_loopexit(base_, nullptr);
  if (loop.joinable()) loop.join();
  // The loop is stopped: everything below runs on this thread alone. Trainer requests are
  // freed with their connections; a task already queued for one must find it gone.
  trainer_requests_.clear();
  if (http_ != nullptr) evhttp_free(http_);  // closes connections; OnStreamClosed frees streams
  http_ = nullptr;
  // Runs the finalizers of the freed connections' bufferevents (BoundedEvhttp's filters).
  if (base_ != nullptr) event_base_loop(base_, EVLOOP_NONBLOCK);
  for (event** ev : {&wake_, &ping_timer_, &reap_timer_}) {
    if (*ev != nullptr) event_free(*ev);
    *ev = nullptr;
  }
  if (base_ != nullptr) event_base_free(base_);  // runs the connection filters' finalizers
  base_ = nullptr;
  bounded_.reset();
}

void OrsHttpServer::Impl::OnWake(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Impl*>(arg);
  std::vector<std::pair<std::string, absl::StatusOr<SubmitResult>>> results;
  std::vector<absl::AnyInvocable<void()>> tasks;
  {
    absl::MutexLock lock(&self->inbox_->mu);
    results.swap(self->inbox_->results);
    tasks.swap(self->inbox_->tasks);
  }
  for (auto& [call_id, result] : results) self->Deliver(call_id, std::move(result));
  for (auto& task : tasks) task();
}

void OrsHttpServer::Impl::OnPingTimer(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<Impl*>(arg);
  const std::vector<Stream*> streams(self->streams_.begin(), self->streams_.end());
  const std::string ping = SsePing();
  for (Stream* stream : streams) {
    if (!PeerAlive(stream->conn)) {
      // The call keeps running; its result waits for a reconnect by id.
      self->Forget(stream);
      evhttp_connection_set_closecb(stream->conn, nullptr, nullptr);
      evhttp_connection_free(stream->conn);  // also frees the request
      delete stream;
      continue;
    }
    SendChunk(stream->req, ping);
  }
}

void OrsHttpServer::Impl::OnReapTimer(evutil_socket_t, short, void* arg) {
  static_cast<Impl*>(arg)->sessions_.Reap();
}

void OrsHttpServer::Impl::OnStreamClosed(evhttp_connection* /*conn*/, void* arg) {
  auto* stream = static_cast<Stream*>(arg);
  stream->server->Forget(stream);
  // When the client went away, libevent detaches the unanswered request and leaves it to us;
  // when the server shuts down, the connection frees it itself.
  if (evhttp_request_get_connection(stream->req) == nullptr) evhttp_request_free(stream->req);
  delete stream;
}

void OrsHttpServer::Impl::Forget(Stream* stream) {
  streams_.erase(stream);
  auto it = waiters_.find(stream->call_id);
  if (it == waiters_.end()) return;
  it->second.erase(stream);
  if (it->second.empty()) waiters_.erase(it);
}

void OrsHttpServer::Impl::OnRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<Impl*>(arg);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  evbuffer* in = evhttp_request_get_input_buffer(req);
  const size_t size = evbuffer_get_length(in);  // at most max_body_bytes (BoundedEvhttp)
  const std::string route = path == nullptr || *path == '\0' ? "/" : path;
  if (route != "/health") {
    evkeyvalq* headers = evhttp_request_get_input_headers(req);
    const char* authorization = evhttp_find_header(headers, "Authorization");
    const char* api_key = evhttp_find_header(headers, "X-API-Key");
    absl::Status auth = CheckHttpCallerToken(
        self->options_.tokens, authorization ? authorization : "", api_key ? api_key : "");
    if (!auth.ok()) {
      const TrainerRouteInfo* trainer = FindTrainerRoute(route);
      if (trainer != nullptr) self->CountTrainerRequest(*trainer, 401, absl::ZeroDuration());
      return SendStatus(req, auth);
    }
  }
  const char* data = size == 0 ? "" : reinterpret_cast<const char*>(evbuffer_pullup(in, -1));
  self->Route(req, route, absl::string_view(data, size));
}

void OrsHttpServer::Impl::Route(evhttp_request* req, absl::string_view path,
                                absl::string_view body) {
  const bool get = evhttp_request_get_command(req) == EVHTTP_REQ_GET;
  const bool post = evhttp_request_get_command(req) == EVHTTP_REQ_POST;
  auto route = [&](absl::string_view name, bool method_ok) {
    if (path != name) return false;
    if (!method_ok)
      SendMethodNotAllowed(req, /*post=*/name != "/health" && name != "/list_environments");
    return true;
  };
  if (route("/health", get)) {
    if (get) SendJson(req, OrsApi::Health());
  } else if (route("/list_environments", get)) {
    if (get) SendJson(req, api_.ListEnvironments());
  } else if (route("/create_session", post)) {
    if (!post) return;
    absl::StatusOr<std::string> sid = sessions_.Issue();
    if (!sid.ok()) return SendStatus(req, sid.status());
    SendSse(req, absl::StrCat(SseEvent("task_id", *sid), SseEvent("end", "")));
  } else if (route("/ping", post) || route("/delete_session", post) || route("/delete", post) ||
             route("/create", post)) {
    if (!post) return;
    absl::StatusOr<std::string> sid = SessionHeader(req);
    if (!sid.ok()) return SendStatus(req, sid.status());
    if (path == "/create") return Create(req, *sid, body);
    if (path == "/ping") {
      auto task = sessions_.Touch(*sid);
      return task.ok() ? SendJson(req, OrsApi::Health()) : SendStatus(req, task.status());
    }
    // Both forget the session (created or only issued); /delete of an unknown one is 404,
    // /delete_session (the client forgetting an id, maybe after /delete) is idempotent.
    if (!sessions_.Delete(*sid) && path == "/delete") {
      return SendError(req, 404, "Active environment not found");
    }
    SendJson(req, absl::StrCat("{\"sid\":", JsonQuote(*sid), "}"));
  } else if (const TrainerRouteInfo* trainer = FindTrainerRoute(path)) {
    if ((evhttp_request_get_command(req) == EVHTTP_REQ_POST) != trainer->post ||
        (!trainer->post && !get)) {
      return SendMethodNotAllowed(req, trainer->post);
    }
    RouteTrainer(req, *trainer, body);
  } else {
    RouteEnv(req, path, body);
  }
}

void OrsHttpServer::Impl::RouteTrainer(evhttp_request* req, const TrainerRouteInfo& info,
                                       absl::string_view body) {
  const uint64_t id = next_trainer_request_++;
  trainer_requests_[id] = TrainerRequest{req, &info, absl::Now()};
  switch (info.route) {
    case TrainerRoute::kSeedSession:
      return AnswerTrainer(id, TrainerApi::NemoGymSeedSession());
    case TrainerRoute::kReverifyMode:
      // Grading depends on the task and the reply only: a rollout can be verified again.
      return AnswerTrainer(id, std::string("\"stateless\""));
    case TrainerRoute::kAggregateMetrics:
      return AnswerTrainer(id, NemoGymAggregateMetrics(body));
    default:
      break;
  }
  // The answer comes on a grading thread, or inline (refused up front, or cached): either
  // way it is sent from the loop, after this handler has returned.
  TrainerApi::Done done = [inbox = inbox_, this, id](absl::StatusOr<std::string> answer) {
    PostTask(*inbox, [this, id, answer = std::move(answer)] { AnswerTrainer(id, answer); });
  };
  if (info.route == TrainerRoute::kGetReward) {
    trainer_.OpenRlhfGetReward(body, absl::InfiniteFuture(), std::move(done));
  } else if (info.route == TrainerRoute::kReward) {
    trainer_.SlimeReward(body, absl::InfiniteFuture(), std::move(done));
  } else {
    trainer_.NemoGymVerify(body, absl::InfiniteFuture(), std::move(done));
  }
}

void OrsHttpServer::Impl::AnswerTrainer(uint64_t id, const absl::StatusOr<std::string>& answer) {
  auto it = trainer_requests_.find(id);
  if (it == trainer_requests_.end()) return;
  const TrainerRequest request = it->second;
  trainer_requests_.erase(it);
  CountTrainerRequest(*request.info, answer.ok() ? 200 : HttpStatusOf(answer.status().code()),
                      absl::Now() - request.start);
  // A request whose client went away was detached by libevent; sending frees it.
  SendResult(request.req, answer);
}

void OrsHttpServer::Impl::CountTrainerRequest(const TrainerRouteInfo& info, int http_code,
                                              absl::Duration latency) {
  if (options_.metrics == nullptr) return;
  absl::string_view route = info.path;
  absl::ConsumePrefix(&route, "/");
  options_.metrics->TrainerRequest(route, http_code, latency);
}

void OrsHttpServer::Impl::RouteEnv(evhttp_request* req, absl::string_view path,
                                   absl::string_view body) {
  absl::string_view rest = path;
  absl::ConsumePrefix(&rest, "/");
  const size_t slash = rest.find('/');
  if (slash == absl::string_view::npos) return SendError(req, 404, "Not Found");
  const absl::string_view env = rest.substr(0, slash);
  const absl::string_view route = rest.substr(slash + 1);
  struct Route {
    absl::string_view name;
    bool post;
  };
  static constexpr Route kRoutes[] = {
      {"splits", false}, {"tools", false},     {"task_tools", false},
      {"prompt", false}, {"tasks", true},      {"num_tasks", true},
      {"task", true},    {"task_range", true}, {"call", true}};
  const Route* match = nullptr;
  for (const Route& r : kRoutes) {
    if (r.name == route) match = &r;
  }
  if (match == nullptr) return SendError(req, 404, "Not Found");
  if ((evhttp_request_get_command(req) == EVHTTP_REQ_POST) != match->post ||
      (!match->post && evhttp_request_get_command(req) != EVHTTP_REQ_GET)) {
    return SendMethodNotAllowed(req, match->post);
  }
  if (absl::Status known = api_.CheckEnvName(env); !known.ok()) return SendStatus(req, known);
  if (route == "splits") return SendJson(req, api_.Splits());
  if (route == "tools") return SendJson(req, OrsApi::Tools());
  if (route == "tasks") return SendResult(req, api_.Tasks(body));
  if (route == "num_tasks") return SendResult(req, api_.NumTasks(body));
  if (route == "task") return SendResult(req, api_.Task(body));
  if (route == "task_range") return SendResult(req, api_.TaskRange(body));
  // The rest need a live session.
  absl::StatusOr<std::string> sid = SessionHeader(req);
  if (!sid.ok()) return SendStatus(req, sid.status());
  absl::StatusOr<TaskRef> task = sessions_.Touch(*sid);
  if (!task.ok()) return SendStatus(req, task.status());
  if (route == "task_tools") return SendJson(req, OrsApi::Tools());
  if (route == "prompt") return SendResult(req, api_.Prompt(*task));
  Call(req, *sid, *task, body);
}

void OrsHttpServer::Impl::Create(evhttp_request* req, const std::string& sid,
                                 absl::string_view body) {
  if (sessions_.Touch(sid).ok()) return SendError(req, 400, "Session already exists");
  if (!sessions_.IsIssued(sid)) {
    return SendError(req, 404,
                     "unknown session id: use the id POST /create_session returned (it expires "
                     "when unused for the session idle timeout)");
  }
  absl::StatusOr<TaskRef> task = api_.ResolveCreate(body);
  if (!task.ok()) return SendStatus(req, task.status());
  if (absl::Status created = sessions_.Create(sid, *std::move(task)); !created.ok()) {
    return SendStatus(req, created);
  }
  SendJson(req, absl::StrCat("{\"sid\":", JsonQuote(sid), "}"));
}

void OrsHttpServer::Impl::Call(evhttp_request* req, const std::string& sid, const TaskRef& task,
                               absl::string_view body) {
  absl::StatusOr<OrsToolCall> call = OrsApi::ParseToolCall(body);
  if (!call.ok()) return SendStatus(req, call.status());
  if (!call->call_id.empty()) return Attach(req, call->call_id, sid);
  const std::string call_id = sessions_.StartCall(sid);
  if (call->tool_error.has_value()) {
    sessions_.FinishCall(call_id, OrsApi::RunToolError(*call->tool_error));
    return Attach(req, call_id, sid);
  }
  // One answer per episode: refused before the environment (and its judge) sees it.
  if (absl::Status begun = sessions_.BeginAnswer(sid, call_id); !begun.ok()) {
    sessions_.DropCall(call_id);
    return SendStatus(req, begun);
  }
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->inline_call = call_id;
    inbox_->inline_result.reset();
  }
  env_.Submit(
      task, *std::move(call->answer), absl::InfiniteFuture(),
      [inbox = inbox_, call_id](absl::StatusOr<SubmitResult> result) {
        absl::MutexLock lock(&inbox->mu);
        if (inbox->inline_call == call_id && inbox->loop_thread == std::this_thread::get_id()) {
          inbox->inline_result = std::move(result);
        } else if (inbox->wake != nullptr) {
          inbox->results.emplace_back(call_id, std::move(result));
          event_active(inbox->wake, 0, 0);
        }
      });
  std::optional<absl::StatusOr<SubmitResult>> inline_result;
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->inline_call.clear();
    inline_result.swap(inbox_->inline_result);
  }
  if (inline_result.has_value() && !inline_result->ok()) {
    // Rejected up front: an HTTP status, so that the client's retry of 429/5xx applies.
    sessions_.DropCall(call_id);
    return SendStatus(req, inline_result->status());
  }
  if (inline_result.has_value()) {
    sessions_.FinishCall(call_id, OrsApi::RunToolOutput(*inline_result), inline_result->ok());
  }
  Attach(req, call_id, sid);
}

std::string OrsHttpServer::Impl::ResultEvents(const std::string& call_id,
                                              const std::string& payload) const {
  std::string events = call_id.empty() ? "" : SseEvent("task_id", call_id);
  const std::vector<absl::string_view> pieces = SseChunks(payload, options_.sse_chunk_bytes);
  for (size_t i = 0; i < pieces.size(); ++i) {
    events += SseEvent(i + 1 == pieces.size() ? "end" : "chunk", pieces[i]);
  }
  return events;
}

void OrsHttpServer::Impl::Attach(evhttp_request* req, const std::string& call_id,
                                 const std::string& sid) {
  const OrsSessionManager::Call* call = sessions_.FindCall(call_id);
  // Another session's call is as unknown as one that never was.
  if (call == nullptr || call->sid != sid) {
    return SendSse(req, SseEvent("error", "unknown task_id"));
  }
  if (call->done) return SendSse(req, ResultEvents(call_id, call->payload));
  AddSseHeaders(req);
  evhttp_send_reply_start(req, 200, nullptr);
  auto* stream = new Stream{this, req, evhttp_request_get_connection(req), call_id};
  evhttp_connection_set_closecb(stream->conn, OnStreamClosed, stream);
  SendChunk(req, SseEvent("task_id", call_id));
  streams_.insert(stream);
  waiters_[call_id].insert(stream);
}

void OrsHttpServer::Impl::Deliver(const std::string& call_id, absl::StatusOr<SubmitResult> result) {
  sessions_.FinishCall(call_id, OrsApi::RunToolOutput(result), result.ok());
  const OrsSessionManager::Call* call = sessions_.FindCall(call_id);
  if (call == nullptr) return;
  auto it = waiters_.find(call_id);
  if (it == waiters_.end()) return;
  const std::vector<Stream*> streams(it->second.begin(), it->second.end());
  for (Stream* stream : streams) Finish(stream, call->payload);
}

void OrsHttpServer::Impl::Finish(Stream* stream, const std::string& payload) {
  Forget(stream);
  evhttp_connection_set_closecb(stream->conn, nullptr, nullptr);
  SendChunk(stream->req, ResultEvents("", payload));
  evhttp_send_reply_end(stream->req);
  delete stream;
}

OrsHttpServer::OrsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<OrsHttpServer>> OrsHttpServer::Start(Environment& env, Clock& clock,
                                                                    OrsServerOptions options) {
  ServerSecurityOptions security;
  security.tokens = options.tokens;
  security.allow_insecure = options.allow_insecure;
  const std::string listen = options.listen;
  auto impl = std::make_unique<Impl>(env, clock, std::move(options));
  // Listen first, so a malformed address is reported as such; the socket closes with `impl`.
  if (absl::Status listening = impl->Listen(); !listening.ok()) return listening;
  if (absl::Status policy = CheckListenPolicy(listen, security); !policy.ok()) return policy;
  Impl* raw = impl.get();
  absl::Notification started;
  raw->loop = std::thread([raw, &started] {
    raw->RecordLoopThread();
    started.Notify();
    raw->Run();
  });
  started.WaitForNotification();
  return std::unique_ptr<OrsHttpServer>(new OrsHttpServer(std::move(impl)));
}

int OrsHttpServer::port() const { return impl_->port(); }

void OrsHttpServer::ReapNow() {
  absl::Notification done;
  const bool posted = impl_->Post([this, &done] {
    impl_->sessions().Reap();
    done.Notify();
  });
  if (posted) done.WaitForNotification();
}

void OrsHttpServer::Shutdown() { impl_->Shutdown(); }

OrsHttpServer::~OrsHttpServer() { Shutdown(); }

}  // namespace hb::env
