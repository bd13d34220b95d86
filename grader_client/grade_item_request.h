// The GradeItem request for one rubric item of one task's reply: the one place that turns the
// data model (a task, a response, a rubric index) into the grader's wire request, for every
// caller (run's dispatcher, hb-env). Pure; thread-safe.
#pragma once

#include <string>

#include "common/healthbench/types.h"
#include "healthbench/grader/v1/grader.pb.h"

namespace hb {

// The conversation is the response's system prompt (when it has one) followed by the task's
// prompt turns; the reply is the response text; the rubric item keeps its exact points text
// and its verbatim flag (a meta-eval row's raw rubric);
// prompt_cache_key is the prompt_id when `send_prompt_cache_key`, else empty (no key
// upstream); request_id as given. `rubric_index` must index example.rubrics.
healthbench::grader::v1::GradeItemRequest BuildGradeItemRequest(const Example& example,
                                                                const Response& response,
                                                                int rubric_index,
                                                                const std::string& request_id,
                                                                bool send_prompt_cache_key);

}  // namespace hb
