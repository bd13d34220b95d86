#include "environment/env_proto.h"

namespace hb::env {

void SubmitResultToProto(const SubmitResult& result, env_v1::SubmitResponse* out) {
  out->set_task_id(result.task_id);
  out->set_split(result.split);
  out->set_reward(result.reward);
  out->set_reward_clipped(result.reward_clipped);
  out->set_points_met(result.points_met);
  out->set_points_possible(result.points_possible);
  for (const ItemResult& item : result.items) {
    env_v1::ItemResult* proto = out->add_items();
    proto->set_criterion(item.criterion);
    proto->set_points(item.points);
    proto->set_met(item.met);
    proto->set_explanation(item.explanation);
  }
  for (const auto& [name, value] : result.tag_scores) (*out->mutable_tag_scores())[name] = value;
  out->mutable_usage()->set_prompt_tokens(result.usage.prompt_tokens);
  out->mutable_usage()->set_cached_prompt_tokens(result.usage.cached_prompt_tokens);
  out->mutable_usage()->set_completion_tokens(result.usage.completion_tokens);
  out->set_from_cache(result.from_cache);
}

SubmitResult SubmitResultFromProto(const env_v1::SubmitResponse& proto) {
  SubmitResult result;
  result.task_id = proto.task_id();
  result.split = proto.split();
  result.reward = proto.reward();
  result.reward_clipped = proto.reward_clipped();
  result.points_met = proto.points_met();
  result.points_possible = proto.points_possible();
  for (const env_v1::ItemResult& item : proto.items()) {
    result.items.push_back(
        ItemResult{item.criterion(), item.points(), item.met(), item.explanation()});
  }
  result.tag_scores.insert(proto.tag_scores().begin(), proto.tag_scores().end());
  result.usage = TokenCounts{proto.usage().prompt_tokens(), proto.usage().cached_prompt_tokens(),
                             proto.usage().completion_tokens()};
  result.from_cache = proto.from_cache();
  return result;
}

}  // namespace hb::env
