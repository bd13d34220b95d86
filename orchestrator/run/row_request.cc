#include "orchestrator/run/row_request.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/healthbench/grader_request_body.h"

namespace hb {

healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const PlannedRow& row, int attempt,
                                                                bool send_prompt_cache_key) {
  healthbench::grader::v1::GradeItemRequest request;
  if (row.response->system_prompt.has_value()) {
    auto* message = request.add_conversation();
    message->set_role("system");
    message->set_content(*row.response->system_prompt);
  }
  for (const Message& turn : row.example->prompt) {
    auto* message = request.add_conversation();
    message->set_role(turn.role);
    message->set_content(turn.content);
  }
  request.set_reply(row.response->response);
  const RubricItem& item = row.example->rubrics[row.rubric_index];
  auto* rubric = request.mutable_rubric_item();
  rubric->set_criterion(item.criterion);
  rubric->set_points(item.points);
  rubric->set_points_text(item.points_text);
  for (const std::string& tag : item.tags) rubric->add_tags(tag);
  if (send_prompt_cache_key) request.set_prompt_cache_key(row.example->prompt_id);
  request.set_request_id(absl::StrCat(*row.checkpoint, "/", row.example->prompt_id, "/",
                                      row.rubric_index, "/", attempt));
  return request;
}

std::string BuildRowRequestBody(const GraderTemplate& grader_template,
                                const GraderSettings& settings, const PlannedRow& row,
                                bool send_prompt_cache_key) {
  const std::string conversation = RenderConversation(
      GradedConversation(row.example->prompt, row.response->system_prompt, row.response->response));
  const std::string prompt =
      grader_template.Fill(conversation, RenderRubricItem(row.example->rubrics[row.rubric_index]));
  return BuildGraderRequestBody(settings, prompt,
                                send_prompt_cache_key ? row.example->prompt_id : "");
}

}  // namespace hb
