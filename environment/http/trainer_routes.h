// TrainerRoutes: the trainers' reward routes of hb-env's HTTP listener (TrainerApi,
// environment/trainer_api.h; shapes in trainer_protocols.h), as rows of the listener's
// HttpRouteTable (http/http_server.h):
//   POST /get_reward             OpenRLHF's remote reward ({"query", "prompts", "labels"})
//   POST /reward                 slime's remote reward ({"prompt", "response", "label"})
//   POST /seed_session           NeMo-Gym resources server: {}
//   POST /verify                 NeMo-Gym: the row echoed + "reward" (judge failure: HTTP 200
//                                with "_ng_failure_class": "judge_failed")
//   POST /aggregate_metrics      NeMo-Gym: {"group_level_metrics", "agent_metrics", ...}
//   GET  /reverify_mode          NeMo-Gym: "stateless"
// NeMo-Gym's paths are also served under its /ng-rollout/<rollout id> prefix (NeMo-Gym with
// observability on prefixes a resources server's paths so; its own middleware strips it). Each
// row is named by its path without '/', the `route` label of its metrics (EnvMetrics).
//
// Threading: handlers run on the loop thread; a grading's answer comes back to it through the
// LoopInbox; nothing here is touched from another thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "environment/env_metrics.h"
#include "environment/http/route_support.h"
#include "environment/trainer_api.h"
#include "environment/trainer_protocols.h"
#include "http/http_server.h"

namespace hb::env {

class TrainerRoutes {
 public:
  // `env`, `metrics` (may be null) and `inbox` must outlive this object.
  TrainerRoutes(Environment& env, TrainerProtocolOptions options, EnvMetrics* metrics,
                std::shared_ptr<LoopInbox> inbox);

  // Adds the rows above to `table`.
  void Register(HttpRouteTable* table);

  // Counts a request for `route` (one of these rows) answered `http_code` before its handler
  // ran (a refused token).
  void CountRefused(const HttpRoute& route, int http_code);

  // Forgets the requests still waiting for their grading (their connections are closing). On
  // the loop thread, or after it stopped.
  void Clear() { waiting_.clear(); }

 private:
  // A request waiting for its answer: the exchange to answer, its route's name and start.
  struct Waiting {
    std::unique_ptr<HttpExchange> exchange;
    std::string name;
    absl::Time start;
  };
  using Grade = void (TrainerApi::*)(absl::string_view, absl::Time, TrainerApi::Done);

  void AddRow(HttpRouteTable* table, const std::string& method, const std::string& path,
              HttpHandler handler);
  // Keeps `exchange` waiting under a new id.
  uint64_t Begin(const std::string& name, HttpExchange& exchange);
  // Answers request `id` (if its connection is still served) with `answer`.
  void Answer(uint64_t id, const absl::StatusOr<std::string>& answer);
  // A row whose answer is graded by `grade`: sent from the loop after the handler returned.
  HttpHandler Graded(const std::string& name, Grade grade);
  // A row answered at once with `answer(body)`.
  HttpHandler Immediate(const std::string& name,
                        std::function<absl::StatusOr<std::string>(absl::string_view)> answer);
  void Count(const std::string& name, int http_code, absl::Duration latency);

  TrainerApi trainer_;
  EnvMetrics* metrics_;
  std::shared_ptr<LoopInbox> inbox_;
  absl::flat_hash_map<uint64_t, Waiting> waiting_;
  uint64_t next_id_ = 0;
};

}  // namespace hb::env
