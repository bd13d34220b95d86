#include "common/base/flags_usage.h"

#include <string>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace hb {
namespace {

// Our flags are everything not defined inside Abseil itself.
bool IsProjectFlagFile(absl::string_view filename) {
  return !absl::StrContains(filename, "/absl/") && !absl::StartsWith(filename, "absl/");
}

}  // namespace

void InitFlagsUsage(const char* usage) {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = &IsProjectFlagFile;
  config.contains_helpshort_flags = &IsProjectFlagFile;
  config.version_string = []() { return std::string(HB_VERSION_STRING) + "\n"; };
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(usage);
}

}  // namespace hb
