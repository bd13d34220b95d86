#include "common/base/rate_limited_log.h"

#include "absl/strings/str_cat.h"

namespace hb {

std::optional<std::string> RateLimitedLog::Admit(absl::string_view kind) {
  const absl::Time now = clock_.Now();
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = windows_.try_emplace(kind);
  Window& window = it->second;
  if (inserted || now - window.start >= options_.interval) {
    window.start = now;
    window.written = 0;
  }
  if (window.written >= options_.max_lines) {
    ++window.suppressed_since_written;
    ++window.suppressed_total;
    return std::nullopt;
  }
  ++window.written;
  std::string suffix;
  if (window.suppressed_since_written > 0) {
    suffix = absl::StrCat(" (suppressed ", window.suppressed_since_written, " similar)");
    window.suppressed_since_written = 0;
  }
  return suffix;
}

int64_t RateLimitedLog::suppressed_total(absl::string_view kind) const {
  absl::MutexLock lock(&mu_);
  auto it = windows_.find(kind);
  return it == windows_.end() ? 0 : it->second.suppressed_total;
}

}  // namespace hb
