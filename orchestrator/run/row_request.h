// The wire form of a planned row: the GradeItem request the dispatcher sends for it. Kept apart
// from row_plan.h so planning stays free of generated proto headers.
#pragma once

#include <string>

#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"
#include "healthbench/grader/v1/grader.pb.h"
#include "orchestrator/run/row_plan.h"

namespace hb {

// The GradeItem request of `row` (grader_client/grade_item_request.h) with request_id
// "<checkpoint>/<prompt_id>/<rubric_index>/<attempt>".
healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const PlannedRow& row, int attempt,
                                                                bool send_prompt_cache_key);

// The body (chat completions or Responses) the grader sends upstream for `row` (and `dry-run`
// prints): the template filled with the graded conversation (the response's system prompt, the
// task's prompt turns, the reply) and the row's rubric item, through BuildGraderRequestBody with
// `settings`; prompt_cache_key is the prompt_id when `send_prompt_cache_key`. The bodies of
// `run --grader-mode batch`.
std::string BuildRowRequestBody(const GraderTemplate& grader_template,
                                const GraderSettings& settings, const PlannedRow& row,
                                bool send_prompt_cache_key);

}  // namespace hb
