#include "grader/verdict_cache.h"

#include "absl/strings/str_cat.h"
#include "common/base/sha256.h"
#include "common/healthbench/grader_request_body.h"
#include "grader/grader_settings.h"

namespace hb {

std::string VerdictCacheKey(const GraderSettings& settings, absl::string_view grader_prompt,
                            bool verbatim) {
  std::string keyed = BuildGraderRequestBody(settings, grader_prompt);
  if (verbatim) keyed = absl::StrCat("verbatim\n", keyed);
  if (!settings.headers.empty()) {
    absl::StrAppend(&keyed, "\nheaders:", HeadersIdentity(settings.headers));
  }
  return Sha256Hex(keyed);
}

}  // namespace hb
