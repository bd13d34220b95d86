#include "grader_service/grader_server_options.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace hb {

absl::StatusOr<GraderServerOptions> CompleteGraderServerOptions(GraderServerOptions options) {
  GraderStackOptions& stack = options;
  HB_ASSIGN_OR_RETURN(stack, CompleteGraderStackOptions(stack));
  const GraderLimits& limits = options.limits;
  if (options.max_concurrent_rpcs < 0 || options.max_upstream_queue < 0) {
    return absl::InvalidArgumentError(
        "--max-concurrent-rpcs and --max-upstream-queue must be >= 0 (0: no limit)");
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--default-deadline must be positive");
  }
  const int64_t prompt_bytes =
      static_cast<int64_t>(std::min<size_t>(limits.max_prompt_bytes, 1 << 28));
  const int64_t message_bytes =
      static_cast<int64_t>(std::min<size_t>(limits.max_message_bytes, 1 << 28));
  options.max_receive_message_bytes = static_cast<int>(
      std::min<int64_t>(std::max(2 * prompt_bytes, message_bytes + (1 << 20)), 1 << 30));
  return options;
}

}  // namespace hb
