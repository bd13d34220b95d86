#include "grader/verdict_cache.h"

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/healthbench/grader_request_body.h"

namespace hb {

std::string VerdictCacheKey(const GraderSettings& settings, absl::string_view grader_prompt,
                            bool verbatim) {
  const std::string body = BuildGraderRequestBody(settings, grader_prompt);
  return Sha256Hex(verbatim ? absl::StrCat("verbatim\n", body) : body);
}

}  // namespace hb
