// ParseGraderReply (common/grading/grader_reply.h) on arbitrary model replies: it must return a
// verdict or kDataLoss, never crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "common/grading/grader_reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view reply(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<hb::Verdict> verdict = hb::ParseGraderReply(reply);
  if (!verdict.ok() && verdict.status().code() != absl::StatusCode::kDataLoss) std::abort();
  hb::StripGraderReplyFences(reply);
  return 0;
}
