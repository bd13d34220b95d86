// OrsHttpServer: the Open Reward Standard HTTP API of hb-env over an hb::env::Environment, so
// that the unmodified ORS Python client (ors.client) works against hb-env as against the
// reference server (ors/server.py). The listener only: the project's HttpServer
// (http/http_server.h, one loop) serving the route table OrsRoutes builds (ors_routes.h: the ORS
// rows, the trainer rows of trainer_routes.h and the token gate); the ORS logic is OrsApi
// (environment/ors/ors_api.h), the session table OrsSessionManager (ors_session_manager.h), the
// status table and SSE framing ors_wire.h.
//
// Routes (environment name matched case-insensitively; error bodies are {"detail": "..."}):
//   GET  /health                 {"status": "ok"}
//   GET  /list_environments      ["healthbench"]
//   GET  /{env}/splits           [{"name", "type"}]
//   GET  /{env}/tools            {"tools": [answer]}
//   POST /{env}/tasks            {"split"} -> {"tasks": [spec], "env_name"}
//   POST /{env}/num_tasks        {"split"} -> {"num_tasks"}
//   POST /{env}/task             {"split", "index"} -> {"task": spec}
//   POST /{env}/task_range       {"split", "start"?, "stop"?} -> {"tasks": [spec]}
//   POST /create_session         SSE: "task_id" (a new session id), then "end"
//   POST /create                 X-Session-ID; {"task_spec": {"prompt_id"}} or {"split","index"}
//   POST /ping                   X-Session-ID; keeps the session alive
//   GET  /{env}/prompt           X-Session-ID; [{"type": "text", "text": prompt_text}]
//   GET  /{env}/task_tools       X-Session-ID; as /{env}/tools
//   POST /{env}/call             X-Session-ID; {"name", "input", "task_id"?}; SSE (below)
//   POST /delete, /delete_session X-Session-ID; {"sid"}
// Trainer routes (TrainerApi, environment/trainer_api.h; shapes in trainer_protocols.h):
//   POST /get_reward             OpenRLHF's remote reward ({"query", "prompts", "labels"})
//   POST /reward                 slime's remote reward ({"prompt", "response", "label"})
//   POST /seed_session           NeMo-Gym resources server: {}
//   POST /verify                 NeMo-Gym: the row echoed + "reward" (judge failure: HTTP 200
//                                with "_ng_failure_class": "judge_failed")
//   POST /aggregate_metrics      NeMo-Gym: {"group_level_metrics", "agent_metrics", ...}
//   GET  /reverify_mode          NeMo-Gym: "stateless"
// NeMo-Gym's paths are also served under its /ng-rollout/<rollout id> prefix. Errors map
// through HttpStatusOf: a bad request 400, an unknown task 404, a full backlog 429 with
// Retry-After, a reply that could not be graded 503 (504 past its deadline), each as
// {"detail": "..."} naming the sample and task. The tokens are checked as on every route,
// also as the password of HTTP Basic auth (CheckHttpCallerToken), which the trainers' aiohttp
// clients send from a URL's userinfo.
// Session errors: no X-Session-ID -> 400 "X-Session-ID header is required"; unknown, deleted
// or reaped session -> 404 "Active environment not found"; /create twice -> 400 "Session
// already exists". Unknown path -> 404 "Not Found"; wrong method -> 405 "Method Not Allowed".
// Requests are read through hb::BoundedEvhttp (http/bounded_evhttp.h): a body over
// max_body_bytes -> 413 {"detail": "request body is N bytes, over the limit of M bytes
// (max_body_bytes)"} before the body is read; a head over http_limits -> 431 (414 for the
// request line); a request not arrived whole within http_limits.max_request_time -> 408; each
// answered in JSON before the connection closes.
// Unlike the reference, an unknown first path segment is not redirected to the default
// environment: /{unknown}/... answers 404 "unknown environment '...'".
//
// POST /{env}/call streams, like the reference: event "task_id" (the call id) at once, ": ping"
// comments every ping_interval while grading runs, then the RunToolOutput JSON split into
// "chunk" events and a final "end" event of at most sse_chunk_bytes each. A client that lost
// the stream posts the same call with "task_id": <call id> and gets the same result (the call
// is neither repeated nor lost); a finished call stays readable for call_linger; an unknown id
// answers one "error" event "unknown task_id". An unknown tool or invalid input is an
// {"ok": false} result inside the stream (as the reference). A submission the Environment
// rejects up front (Submit's callback runs inline) is answered with the HTTP status of its
// code instead of a stream, so that the client's retry of 429/5xx applies (429 carries
// Retry-After); a grading that fails later is {"ok": false, "error": "<CODE>: <message>"}.
//
// Sessions idle (no create/ping/prompt/task_tools/call) for longer than session_idle_timeout,
// by the injected clock, are deleted by a reaper that runs every reaper_period.
//
// Threading: one libevent loop thread serves every connection; open calls are timers and
// buffers, not threads. Submit callbacks (on the Environment's threads) hand results to the
// loop through a mutex-guarded queue and event_active; no evhttp object is touched off the
// loop thread.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "common/base/clock.h"
#include "environment/environment.h"
#include "environment/http/ors_server_options.h"

namespace hb::env {

class OrsHttpServer {
 public:
  // Binds `options.listen` (a port in use is refused: kUnavailable naming the address; a
  // non-loopback address without tokens, unless allow_insecure: kFailedPrecondition) and
  // starts the loop thread. `env` and `clock` are not owned and must outlive the server.
  // kInvalidArgument for a malformed listen address or options (io_timeout <= ping_interval,
  // sse_chunk_bytes < 8, max_body_bytes 0).
  static absl::StatusOr<std::unique_ptr<OrsHttpServer>> Start(Environment& env, Clock& clock,
                                                              OrsServerOptions options);

  // The bound port (the real one when options.listen asked for 0).
  int port() const;

  // Runs one reaper pass on the loop thread and returns when it is done (tests use it with a
  // fake clock instead of waiting for reaper_period). Thread-safe; not from the loop thread,
  // nor concurrently with Shutdown(); returns at once after Shutdown().
  void ReapNow();

  // Stops accepting, closes every connection (open call streams end without a result) and
  // joins the loop thread. Submit callbacks that arrive later are dropped. Idempotent; not
  // from the loop thread.
  void Shutdown();
  ~OrsHttpServer();

  class Impl;

 private:
  explicit OrsHttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hb::env
