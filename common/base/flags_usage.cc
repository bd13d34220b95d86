#include "common/base/flags_usage.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
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

std::vector<std::string> NormalizeFlagNames(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg[0] != '-') continue;
    size_t start = arg[1] == '-' ? 2 : 1;
    size_t end = std::min(arg.find('='), arg.size());
    std::replace(arg.begin() + static_cast<std::ptrdiff_t>(start),
                 arg.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  }
  return args;
}

std::vector<std::string> ParseFlags(int argc, char** argv, const char* usage) {
  InitFlagsUsage(usage);
  std::vector<std::string> args = NormalizeFlagNames(argc, argv);
  std::vector<char*> pointers;
  pointers.reserve(args.size());
  for (std::string& arg : args) pointers.push_back(arg.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(pointers.size()), pointers.data());
  return std::vector<std::string>(positional.begin(), positional.end());
}

}  // namespace hb
