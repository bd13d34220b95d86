#include "environment/http/ors_routes.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "environment/ors/ors_wire.h"
#include "security/bearer_tokens.h"

namespace hb::env {
namespace {

// The request's X-Session-ID: kInvalidArgument when missing or not a well-formed id.
absl::StatusOr<std::string> SessionHeader(const HttpServerRequest& request) {
  std::string id(absl::StripAsciiWhitespace(request.Header("X-Session-ID")));
  if (id.empty()) return absl::InvalidArgumentError("X-Session-ID header is required");
  if (absl::Status valid = CheckSessionId(id); !valid.ok()) return valid;
  return id;
}

HttpHeaders SseHeaders() {
  return {{"Content-Type", "text/event-stream"},
          {"Cache-Control", "no-cache"},
          {"X-Accel-Buffering", "no"}};
}

void SendSse(HttpExchange& exchange, absl::string_view events) {
  exchange.Reply(200, SseHeaders(), events);
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

OrsRoutes::OrsRoutes(Environment& env, Clock& clock, const OrsServerOptions& options,
                     std::shared_ptr<LoopInbox> inbox)
    : env_(env),
      options_(options),
      api_(env, options_.env_name),
      sessions_(clock, {options_.session_idle_timeout, options_.call_linger, options_.max_sessions,
                        options_.max_finished_calls}),
      inbox_(std::move(inbox)) {}

OrsRoutes::~OrsRoutes() { StopTimers(); }

void OrsRoutes::Register(HttpRouteTable* table, TrainerRoutes* trainer) {
  AddSessionRoutes(table);
  trainer->Register(table);
  AddEnvRoutes(table);
  table->SetGate(
      [this, trainer](const HttpServerRequest& request, HttpExchange& exchange,
                      const HttpRoute* route) { return Admit(request, exchange, route, trainer); });
}

bool OrsRoutes::Admit(const HttpServerRequest& request, HttpExchange& exchange,
                      const HttpRoute* route, TrainerRoutes* trainer) {
  if (request.path == "/health") return true;
  absl::Status auth = CheckHttpCallerToken(options_.tokens, request.Header("Authorization"),
                                           request.Header("X-API-Key"));
  if (auth.ok()) return true;
  if (route != nullptr && !route->name.empty()) trainer->CountRefused(*route, 401);
  SendStatus(exchange, auth);
  return false;
}

void OrsRoutes::AddSessionRoutes(HttpRouteTable* table) {
  table->Add({"GET", "/health", [](const HttpServerRequest&, HttpExchange& exchange) {
                SendJson(exchange, OrsApi::Health());
              }});
  table->Add({"GET", "/list_environments", [this](const HttpServerRequest&, HttpExchange& ex) {
                SendJson(ex, api_.ListEnvironments());
              }});
  table->Add({"POST", "/create_session",
              [this](const HttpServerRequest&, HttpExchange& ex) { CreateSession(ex); }});
  table->Add({"POST", "/ping", [this](const HttpServerRequest& request, HttpExchange& ex) {
                absl::StatusOr<std::string> sid = SessionHeader(request);
                if (!sid.ok()) return SendStatus(ex, sid.status());
                auto task = sessions_.Touch(*sid);
                return task.ok() ? SendJson(ex, OrsApi::Health()) : SendStatus(ex, task.status());
              }});
  for (const char* path : {"/delete_session", "/delete"}) {
    table->Add({"POST", path, [this](const HttpServerRequest& request, HttpExchange& ex) {
                  ForgetSession(request, ex);
                }});
  }
  table->Add({"POST", "/create",
              [this](const HttpServerRequest& request, HttpExchange& ex) { Create(request, ex); }});
}

void OrsRoutes::AddEnvRoutes(HttpRouteTable* table) {
  auto json = [this](std::function<std::string(const OrsApi&)> answer) {
    return ForEnv(
        [this, answer](const HttpServerRequest&, HttpExchange& ex) { SendJson(ex, answer(api_)); });
  };
  auto parsed = [this](absl::StatusOr<std::string> (OrsApi::*answer)(absl::string_view) const) {
    return ForEnv([this, answer](const HttpServerRequest& request, HttpExchange& ex) {
      SendResult(ex, (api_.*answer)(request.body));
    });
  };
  table->Add({"GET", "/*/splits", json([](const OrsApi& api) { return api.Splits(); })});
  table->Add({"GET", "/*/tools", json([](const OrsApi&) { return OrsApi::Tools(); })});
  table->Add({"GET", "/*/task_tools", ForSession(&OrsRoutes::TaskTools)});
  table->Add({"GET", "/*/prompt", ForSession(&OrsRoutes::Prompt)});
  table->Add({"POST", "/*/tasks", parsed(&OrsApi::Tasks)});
  table->Add({"POST", "/*/num_tasks", parsed(&OrsApi::NumTasks)});
  table->Add({"POST", "/*/task", parsed(&OrsApi::Task)});
  table->Add({"POST", "/*/task_range", parsed(&OrsApi::TaskRange)});
  table->Add({"POST", "/*/call", ForSession(&OrsRoutes::Call)});
}

HttpHandler OrsRoutes::ForEnv(
    std::function<void(const HttpServerRequest&, HttpExchange&)> handler) {
  return [this, handler](const HttpServerRequest& request, HttpExchange& exchange) {
    if (absl::Status known = api_.CheckEnvName(request.params.at(0)); !known.ok()) {
      return SendStatus(exchange, known);
    }
    handler(request, exchange);
  };
}

HttpHandler OrsRoutes::ForSession(SessionHandler handler) {
  return ForEnv([this, handler](const HttpServerRequest& request, HttpExchange& exchange) {
    absl::StatusOr<std::string> sid = SessionHeader(request);
    if (!sid.ok()) return SendStatus(exchange, sid.status());
    absl::StatusOr<TaskRef> task = sessions_.Touch(*sid);
    if (!task.ok()) return SendStatus(exchange, task.status());
    (this->*handler)(request, exchange, *sid, *task);
  });
}

void OrsRoutes::CreateSession(HttpExchange& exchange) {
  absl::StatusOr<std::string> sid = sessions_.Issue();
  if (!sid.ok()) return SendStatus(exchange, sid.status());
  SendSse(exchange, absl::StrCat(SseEvent("task_id", *sid), SseEvent("end", "")));
}

void OrsRoutes::ForgetSession(const HttpServerRequest& request, HttpExchange& exchange) {
  absl::StatusOr<std::string> sid = SessionHeader(request);
  if (!sid.ok()) return SendStatus(exchange, sid.status());
  // Both forget the session (created or only issued); /delete of an unknown one is 404,
  // /delete_session (the client forgetting an id, maybe after /delete) is idempotent.
  if (!sessions_.Delete(*sid) && request.path == "/delete") {
    return SendError(exchange, 404, "Active environment not found");
  }
  SendJson(exchange, absl::StrCat("{\"sid\":", JsonQuote(*sid), "}"));
}

void OrsRoutes::Create(const HttpServerRequest& request, HttpExchange& exchange) {
  absl::StatusOr<std::string> sid = SessionHeader(request);
  if (!sid.ok()) return SendStatus(exchange, sid.status());
  if (sessions_.Touch(*sid).ok()) return SendError(exchange, 400, "Session already exists");
  if (!sessions_.IsIssued(*sid)) {
    return SendError(exchange, 404,
                     "unknown session id: use the id POST /create_session returned (it expires "
                     "when unused for the session idle timeout)");
  }
  absl::StatusOr<TaskRef> task = api_.ResolveCreate(request.body);
  if (!task.ok()) return SendStatus(exchange, task.status());
  if (absl::Status created = sessions_.Create(*sid, *std::move(task)); !created.ok()) {
    return SendStatus(exchange, created);
  }
  SendJson(exchange, absl::StrCat("{\"sid\":", JsonQuote(*sid), "}"));
}

void OrsRoutes::Prompt(const HttpServerRequest&, HttpExchange& exchange, const std::string&,
                       const TaskRef& task) {
  SendResult(exchange, api_.Prompt(task));
}

void OrsRoutes::TaskTools(const HttpServerRequest&, HttpExchange& exchange, const std::string&,
                          const TaskRef&) {
  SendJson(exchange, OrsApi::Tools());
}

void OrsRoutes::Call(const HttpServerRequest& request, HttpExchange& exchange,
                     const std::string& sid, const TaskRef& task) {
  absl::StatusOr<OrsToolCall> call = OrsApi::ParseToolCall(request.body);
  if (!call.ok()) return SendStatus(exchange, call.status());
  if (!call->call_id.empty()) return Attach(exchange, call->call_id, sid);
  const std::string call_id = sessions_.StartCall(sid);
  if (call->tool_error.has_value()) {
    sessions_.FinishCall(call_id, OrsApi::RunToolError(*call->tool_error));
    return Attach(exchange, call_id, sid);
  }
  // One answer per episode: refused before the environment (and its judge) sees it.
  if (absl::Status begun = sessions_.BeginAnswer(sid, call_id); !begun.ok()) {
    sessions_.DropCall(call_id);
    return SendStatus(exchange, begun);
  }
  std::optional<absl::StatusOr<SubmitResult>> inline_result =
      Submit(task, *std::move(call->answer), call_id);
  if (inline_result.has_value() && !inline_result->ok()) {
    // Rejected up front: an HTTP status, so that the client's retry of 429/5xx applies.
    sessions_.DropCall(call_id);
    return SendStatus(exchange, inline_result->status());
  }
  if (inline_result.has_value()) {
    sessions_.FinishCall(call_id, OrsApi::RunToolOutput(*inline_result), inline_result->ok());
  }
  Attach(exchange, call_id, sid);
}

std::optional<absl::StatusOr<SubmitResult>> OrsRoutes::Submit(const TaskRef& task,
                                                              std::string answer,
                                                              const std::string& call_id) {
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->inline_call = call_id;
    inbox_->inline_result.reset();
  }
  env_.Submit(
      task, std::move(answer), absl::InfiniteFuture(),
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
  absl::MutexLock lock(&inbox_->mu);
  inbox_->inline_call.clear();
  inline_result.swap(inbox_->inline_result);
  return inline_result;
}

std::string OrsRoutes::ResultEvents(const std::string& call_id, const std::string& payload) const {
  std::string events = call_id.empty() ? "" : SseEvent("task_id", call_id);
  const std::vector<absl::string_view> pieces = SseChunks(payload, options_.sse_chunk_bytes);
  for (size_t i = 0; i < pieces.size(); ++i) {
    events += SseEvent(i + 1 == pieces.size() ? "end" : "chunk", pieces[i]);
  }
  return events;
}

void OrsRoutes::Attach(HttpExchange& exchange, const std::string& call_id, const std::string& sid) {
  const OrsSessionManager::Call* call = sessions_.FindCall(call_id);
  // Another session's call is as unknown as one that never was.
  if (call == nullptr || call->sid != sid) {
    return SendSse(exchange, SseEvent("error", "unknown task_id"));
  }
  if (call->done) return SendSse(exchange, ResultEvents(call_id, call->payload));
  evhttp_request* req = exchange.raw();
  if (req == nullptr) return SendError(exchange, 503, "a running call streams on a connection");
  StartHttpStream(req, 200, SseHeaders());
  auto* stream = new Stream{this, req, evhttp_request_get_connection(req), call_id};
  evhttp_connection_set_closecb(stream->conn, OnStreamClosed, stream);
  SendHttpChunk(req, SseEvent("task_id", call_id));
  streams_.insert(stream);
  waiters_[call_id].insert(stream);
}

void OrsRoutes::Deliver(const std::string& call_id, absl::StatusOr<SubmitResult> result) {
  sessions_.FinishCall(call_id, OrsApi::RunToolOutput(result), result.ok());
  const OrsSessionManager::Call* call = sessions_.FindCall(call_id);
  if (call == nullptr) return;
  auto it = waiters_.find(call_id);
  if (it == waiters_.end()) return;
  const std::vector<Stream*> streams(it->second.begin(), it->second.end());
  for (Stream* stream : streams) Finish(stream, call->payload);
}

void OrsRoutes::Finish(Stream* stream, const std::string& payload) {
  Forget(stream);
  evhttp_connection_set_closecb(stream->conn, nullptr, nullptr);
  SendHttpChunk(stream->req, ResultEvents("", payload));
  EndHttpStream(stream->req);
  delete stream;
}

void OrsRoutes::Forget(Stream* stream) {
  streams_.erase(stream);
  auto it = waiters_.find(stream->call_id);
  if (it == waiters_.end()) return;
  it->second.erase(stream);
  if (it->second.empty()) waiters_.erase(it);
}

void OrsRoutes::StartTimers(event_base* base) {
  wake_ = event_new(base, -1, 0, OnWake, this);
  ping_timer_ = event_new(base, -1, EV_PERSIST, OnPingTimer, this);
  reap_timer_ = event_new(base, -1, EV_PERSIST, OnReapTimer, this);
  const timeval ping = absl::ToTimeval(std::max(options_.ping_interval, absl::Microseconds(1)));
  const timeval reap = absl::ToTimeval(std::max(options_.reaper_period, absl::Microseconds(1)));
  evtimer_add(ping_timer_, &ping);
  evtimer_add(reap_timer_, &reap);
  absl::MutexLock lock(&inbox_->mu);
  inbox_->wake = wake_;
}

void OrsRoutes::StopTimers() {
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->wake = nullptr;
  }
  for (event** ev : {&wake_, &ping_timer_, &reap_timer_}) {
    if (*ev != nullptr) event_free(*ev);
    *ev = nullptr;
  }
}

void OrsRoutes::OnWake(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<OrsRoutes*>(arg);
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

void OrsRoutes::OnPingTimer(evutil_socket_t, short, void* arg) {
  auto* self = static_cast<OrsRoutes*>(arg);
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
    SendHttpChunk(stream->req, ping);
  }
}

void OrsRoutes::OnReapTimer(evutil_socket_t, short, void* arg) {
  static_cast<OrsRoutes*>(arg)->sessions_.Reap();
}

void OrsRoutes::OnStreamClosed(evhttp_connection* /*conn*/, void* arg) {
  auto* stream = static_cast<Stream*>(arg);
  stream->routes->Forget(stream);
  // When the client went away, libevent detaches the unanswered request and leaves it to us;
  // when the server shuts down, the connection frees it itself.
  if (evhttp_request_get_connection(stream->req) == nullptr) evhttp_request_free(stream->req);
  delete stream;
}

}  // namespace hb::env
