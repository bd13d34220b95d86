#include "grader/grader_settings.h"

namespace hb {

absl::Status ValidateGraderSettings(const GraderSettings& settings) {
  if (settings.max_tokens <= 0) {
    return absl::InvalidArgumentError("--llm-max-tokens must be positive");
  }
  return absl::OkStatus();
}

}  // namespace hb
