#include "grader_client/grade_item_request.h"

namespace hb {

healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const Example& example,
                                                                const Response& response,
                                                                int rubric_index,
                                                                const std::string& request_id,
                                                                bool send_prompt_cache_key) {
  healthbench::grader::v1::GradeItemRequest request;
  if (response.system_prompt.has_value()) {
    auto* message = request.add_conversation();
    message->set_role("system");
    message->set_content(*response.system_prompt);
  }
  for (const Message& turn : example.prompt) {
    auto* message = request.add_conversation();
    message->set_role(turn.role);
    message->set_content(turn.content);
  }
  request.set_reply(response.response);
  const RubricItem& item = example.rubrics[rubric_index];
  auto* rubric = request.mutable_rubric_item();
  rubric->set_criterion(item.criterion);
  rubric->set_points(item.points);
  rubric->set_points_text(item.points_text);
  for (const std::string& tag : item.tags) rubric->add_tags(tag);
  rubric->set_verbatim(item.verbatim);
  if (send_prompt_cache_key) request.set_prompt_cache_key(example.prompt_id);
  request.set_request_id(request_id);
  return request;
}

}  // namespace hb
