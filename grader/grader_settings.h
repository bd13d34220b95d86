// Validation of GraderSettings (common/healthbench/types.h), the model settings every grader
// request carries: one check shared by hb-grader, `hb-orchestrator run`, `dry-run` and `score`.
#pragma once

#include "absl/status/status.h"
#include "common/healthbench/types.h"

namespace hb {

// kInvalidArgument naming the flag when a setting cannot produce a valid request
// ("--llm-max-tokens must be positive"). Thread-safe.
absl::Status ValidateGraderSettings(const GraderSettings& settings);

}  // namespace hb
