// The wire form of a planned row: the GradeItem request the dispatcher sends for it. Kept apart
// from row_plan.h so planning stays free of generated proto headers.
#pragma once

#include "healthbench/grader/v1/grader.pb.h"
#include "orchestrator/run/row_plan.h"

namespace hb {

// The GradeItem request of `row`: the conversation is the response's system prompt (when it
// has one) followed by the task's prompt turns; the reply is the response text; the rubric
// item keeps its exact points text; prompt_cache_key is the prompt_id when
// `send_prompt_cache_key`, else empty (no key upstream); request_id is
// "<checkpoint>/<prompt_id>/<rubric_index>/<attempt>".
healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const PlannedRow& row, int attempt,
                                                                bool send_prompt_cache_key);

}  // namespace hb
