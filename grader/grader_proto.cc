#include "grader/grader_proto.h"

#include <vector>

#include "absl/time/time.h"

namespace hb {

namespace grader_v1 = ::healthbench::grader::v1;

std::vector<Message> ConversationFromProto(
    const google::protobuf::RepeatedPtrField<grader_v1::Message>& messages) {
  std::vector<Message> out;
  out.reserve(messages.size());
  for (const grader_v1::Message& m : messages) out.push_back(Message{m.role(), m.content()});
  return out;
}

void UsageToProto(const ChatUsage& usage, grader_v1::TokenUsage* out) {
  out->set_prompt_tokens(usage.prompt_tokens);
  out->set_cached_prompt_tokens(usage.cached_tokens);
  out->set_completion_tokens(usage.completion_tokens);
}

RubricItem RubricItemFromProto(const grader_v1::RubricItem& item) {
  RubricItem out;
  out.criterion = item.criterion();
  out.points = item.points();
  out.points_text = item.points_text();
  out.tags.assign(item.tags().begin(), item.tags().end());
  out.verbatim = item.verbatim();
  return out;
}

GradeItemInput GradeItemInputFromProto(const grader_v1::GradeItemRequest& request) {
  GradeItemInput input;
  input.conversation = ConversationFromProto(request.conversation());
  input.reply = request.reply();
  input.item = RubricItemFromProto(request.rubric_item());
  input.request_id = request.request_id();
  input.prompt_cache_key = request.prompt_cache_key();
  return input;
}

void ItemVerdictToProto(const ItemVerdict& verdict, grader_v1::GradeItemResponse* response) {
  response->set_criteria_met(verdict.verdict.criteria_met);
  response->set_explanation(verdict.verdict.explanation);
  response->set_attempts(verdict.attempts);
  response->set_grader_model(verdict.model);
  UsageToProto(verdict.usage, response->mutable_usage());
  response->set_upstream_latency_ms(absl::ToDoubleMilliseconds(verdict.upstream_latency));
  response->set_raw_reply(verdict.raw_reply);
  response->set_rate_limited_attempts(verdict.rate_limited_attempts);
  response->set_from_cache(verdict.from_cache);
  response->set_simulated(verdict.simulated);
  const RateLimitInfo& rl = verdict.rate_limit;
  const bool has_requests = rl.limit_requests || rl.remaining_requests || rl.reset_requests;
  const bool has_tokens = rl.limit_tokens || rl.remaining_tokens || rl.reset_tokens;
  if (has_requests || has_tokens) {
    grader_v1::UpstreamRateLimit* out = response->mutable_rate_limit();
    out->set_has_requests(has_requests);
    out->set_limit_requests(rl.limit_requests.value_or(0));
    out->set_remaining_requests(rl.remaining_requests.value_or(0));
    out->set_reset_requests_ms(
        absl::ToInt64Milliseconds(rl.reset_requests.value_or(absl::ZeroDuration())));
    out->set_has_tokens(has_tokens);
    out->set_limit_tokens(rl.limit_tokens.value_or(0));
    out->set_remaining_tokens(rl.remaining_tokens.value_or(0));
    out->set_reset_tokens_ms(
        absl::ToInt64Milliseconds(rl.reset_tokens.value_or(absl::ZeroDuration())));
    out->set_age_ms(absl::ToInt64Milliseconds(verdict.rate_limit_age));
  }
}

void GradeItemResponseToProto(const ItemVerdict& verdict, const std::string& request_id,
                              grader_v1::GradeItemResponse* response) {
  ItemVerdictToProto(verdict, response);
  response->set_request_id(request_id);
}

}  // namespace hb
