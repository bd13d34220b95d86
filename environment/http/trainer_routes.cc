#include "environment/http/trainer_routes.h"

#include <utility>

#include "environment/ors/ors_wire.h"

namespace hb::env {

TrainerRoutes::TrainerRoutes(Environment& env, TrainerProtocolOptions options, EnvMetrics* metrics,
                             std::shared_ptr<LoopInbox> inbox)
    : trainer_(env, std::move(options), metrics), metrics_(metrics), inbox_(std::move(inbox)) {}

void TrainerRoutes::Register(HttpRouteTable* table) {
  AddRow(table, "POST", "/get_reward", Graded("get_reward", &TrainerApi::OpenRlhfGetReward));
  AddRow(table, "POST", "/reward", Graded("reward", &TrainerApi::SlimeReward));
  // NeMo-Gym's, also under its /ng-rollout/<rollout id> prefix.
  for (const std::string prefix : {"", "/ng-rollout/*"}) {
    AddRow(table, "POST", prefix + "/seed_session",
           Immediate("seed_session",
                     [](absl::string_view) { return TrainerApi::NemoGymSeedSession(); }));
    AddRow(table, "POST", prefix + "/verify", Graded("verify", &TrainerApi::NemoGymVerify));
    AddRow(table, "POST", prefix + "/aggregate_metrics",
           Immediate("aggregate_metrics", NemoGymAggregateMetrics));
    // Grading depends on the task and the reply only: a rollout can be verified again.
    AddRow(table, "GET", prefix + "/reverify_mode",
           Immediate("reverify_mode", [](absl::string_view) { return "\"stateless\""; }));
  }
}

void TrainerRoutes::AddRow(HttpRouteTable* table, const std::string& method,
                           const std::string& path, HttpHandler handler) {
  std::string name = path.substr(path.rfind('/') + 1);
  table->Add({method, path, std::move(handler), /*prefix=*/false, std::move(name)});
}

HttpHandler TrainerRoutes::Immediate(
    const std::string& name, std::function<absl::StatusOr<std::string>(absl::string_view)> answer) {
  return [this, name, answer](const HttpServerRequest& request, HttpExchange& exchange) {
    Answer(Begin(name, exchange), answer(request.body));
  };
}

HttpHandler TrainerRoutes::Graded(const std::string& name, Grade grade) {
  return [this, name, grade](const HttpServerRequest& request, HttpExchange& exchange) {
    const uint64_t id = Begin(name, exchange);
    // The answer comes on a grading thread, or inline (refused up front, or cached): either
    // way it is sent from the loop, after this handler has returned.
    TrainerApi::Done done = [inbox = inbox_, this, id](absl::StatusOr<std::string> answer) {
      PostToLoop(*inbox, [this, id, answer = std::move(answer)] { Answer(id, answer); });
    };
    (trainer_.*grade)(request.body, absl::InfiniteFuture(), std::move(done));
  };
}

uint64_t TrainerRoutes::Begin(const std::string& name, HttpExchange& exchange) {
  const uint64_t id = next_id_++;
  waiting_[id] = Waiting{exchange.Defer(), name, absl::Now()};
  return id;
}

void TrainerRoutes::Answer(uint64_t id, const absl::StatusOr<std::string>& answer) {
  auto it = waiting_.find(id);
  if (it == waiting_.end()) return;
  Waiting request = std::move(it->second);
  waiting_.erase(it);
  Count(request.name, answer.ok() ? 200 : HttpStatusOf(answer.status().code()),
        absl::Now() - request.start);
  // A request whose client went away was detached by libevent; sending frees it.
  SendResult(*request.exchange, answer);
}

void TrainerRoutes::CountRefused(const HttpRoute& route, int http_code) {
  Count(route.name, http_code, absl::ZeroDuration());
}

void TrainerRoutes::Count(const std::string& name, int http_code, absl::Duration latency) {
  if (metrics_ != nullptr) metrics_->TrainerRequest(name, http_code, latency);
}

}  // namespace hb::env
