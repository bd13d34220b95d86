#include "grader/verdict_cache.h"

#include "common/base/sha256.h"
#include "common/healthbench/grader_request_body.h"

namespace hb {

std::string VerdictCacheKey(const GraderSettings& settings, absl::string_view grader_prompt) {
  return Sha256Hex(BuildGraderRequestBody(settings, grader_prompt));
}

}  // namespace hb
