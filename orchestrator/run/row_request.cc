#include "orchestrator/run/row_request.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/healthbench/grader_request_body.h"
#include "grader_client/grade_item_request.h"

namespace hb {

healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const PlannedRow& row, int attempt,
                                                                bool send_prompt_cache_key) {
  return BuildGradeItemRequest(*row.example, *row.response, row.rubric_index,
                               absl::StrCat(*row.checkpoint, "/", row.example->prompt_id, "/",
                                            row.rubric_index, "/", attempt),
                               send_prompt_cache_key);
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
