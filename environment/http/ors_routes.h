// OrsRoutes: the Open Reward Standard HTTP API of hb-env as rows of the listener's
// HttpRouteTable (http/http_server.h), over OrsApi (ORS logic), OrsSessionManager (sessions)
// and ors_wire.h (status table, SSE framing) in environment/ors/. The routes and their answers
// are listed in ors_http_server.h. Register() adds these rows, the trainer rows (TrainerRoutes)
// and the token gate in hb-env's order; the listener (ors_http_server.h) and the request fuzzer
// (fuzz/http_request_fuzzer.cc) both serve the table it builds.
//
// Open call streams need the connection (HttpExchange::raw()); the timers that ping them, reap
// idle sessions and deliver results run on the loop StartTimers() was given. Without a loop
// (the fuzzer) every route still answers, except that a call still running cannot be streamed
// (503).
//
// Threading: handlers, timers and stream callbacks run on the loop thread; Submit callbacks
// reach it through the LoopInbox.
#pragma once

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "environment/environment.h"
#include "environment/http/ors_server_options.h"
#include "environment/http/route_support.h"
#include "environment/http/trainer_routes.h"
#include "environment/ors/ors_api.h"
#include "environment/ors/ors_session_manager.h"
#include "http/http_server.h"

struct event;
struct event_base;
struct evhttp_connection;
struct evhttp_request;

namespace hb::env {

class OrsRoutes {
 public:
  // `env`, `clock` and `inbox` must outlive this object; `options` is copied.
  OrsRoutes(Environment& env, Clock& clock, const OrsServerOptions& options,
            std::shared_ptr<LoopInbox> inbox);
  ~OrsRoutes();

  // Adds hb-env's rows to `table`: the ORS session routes, then `trainer`'s rows, then the
  // /{env}/... routes; and the gate that checks the tokens on every route but /health (a
  // refused trainer request is counted by `trainer`). `trainer` must outlive the table.
  void Register(HttpRouteTable* table, TrainerRoutes* trainer);

  // Creates the wake, ping and reap events on `base` (the loop serving the table) and opens the
  // inbox. Before the loop runs.
  void StartTimers(event_base* base);
  // Frees them; after the loop stopped, before its connections are closed.
  void StopTimers();

  OrsSessionManager& sessions() { return sessions_; }

 private:
  // An open call stream: the reply has started and waits for the call's result.
  struct Stream {
    OrsRoutes* routes;
    evhttp_request* req;
    evhttp_connection* conn;
    std::string call_id;
  };
  using SessionHandler = void (OrsRoutes::*)(const HttpServerRequest&, HttpExchange&,
                                             const std::string& sid, const TaskRef& task);

  static void OnWake(int, short, void* arg);
  static void OnPingTimer(int, short, void* arg);
  static void OnReapTimer(int, short, void* arg);
  static void OnStreamClosed(evhttp_connection* conn, void* arg);

  void AddSessionRoutes(HttpRouteTable* table);
  void AddEnvRoutes(HttpRouteTable* table);
  // A /{env}/... handler: the environment name checked, then `handler`.
  HttpHandler ForEnv(std::function<void(const HttpServerRequest&, HttpExchange&)> handler);
  // A /{env}/... handler of a live session (X-Session-ID): then `handler`.
  HttpHandler ForSession(SessionHandler handler);
  bool Admit(const HttpServerRequest& request, HttpExchange& exchange, const HttpRoute* route,
             TrainerRoutes* trainer);
  void CreateSession(HttpExchange& exchange);
  void ForgetSession(const HttpServerRequest& request, HttpExchange& exchange);
  void Create(const HttpServerRequest& request, HttpExchange& exchange);
  void Prompt(const HttpServerRequest& request, HttpExchange& exchange, const std::string& sid,
              const TaskRef& task);
  void TaskTools(const HttpServerRequest& request, HttpExchange& exchange, const std::string& sid,
                 const TaskRef& task);
  void Call(const HttpServerRequest& request, HttpExchange& exchange, const std::string& sid,
            const TaskRef& task);
  // Runs Submit for call `call_id`; the result when the callback ran inline.
  std::optional<absl::StatusOr<SubmitResult>> Submit(const TaskRef& task, std::string answer,
                                                     const std::string& call_id);
  // Streams call `call_id`'s result to the request (session `sid`'s calls only).
  void Attach(HttpExchange& exchange, const std::string& call_id, const std::string& sid);
  void Deliver(const std::string& call_id, absl::StatusOr<SubmitResult> result);
  void Finish(Stream* stream, const std::string& payload);
  void Forget(Stream* stream);
  std::string ResultEvents(const std::string& call_id, const std::string& payload) const;

  Environment& env_;
  const OrsServerOptions options_;
  OrsApi api_;
  OrsSessionManager sessions_;
  std::shared_ptr<LoopInbox> inbox_;
  event* wake_ = nullptr;
  event* ping_timer_ = nullptr;
  event* reap_timer_ = nullptr;
  // Every open stream, and the open streams of each running call.
  absl::flat_hash_set<Stream*> streams_;
  absl::flat_hash_map<std::string, absl::flat_hash_set<Stream*>> waiters_;
};

}  // namespace hb::env
