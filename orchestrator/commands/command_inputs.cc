#include "orchestrator/commands/command_inputs.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/status_macros.h"
#include "common/healthbench/subsets.h"

namespace hb::commands_internal {

absl::Status CheckExamples(int64_t examples) {
  if (examples == -1 || examples > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--examples must be a positive number (or -1 for all), got ", examples));
}

void ApplyExamples(Dataset& dataset, int64_t examples) {
  if (examples >= 0) SelectExamples(dataset, static_cast<size_t>(examples));
}

absl::Status WriteOutput(const std::string& path, absl::string_view contents) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    HB_RETURN_IF_ERROR(MakeDirs(path.substr(0, slash)));
  }
  return WriteFileAtomically(path, contents);
}

absl::Status Require(absl::string_view flag, const std::string& value) {
  if (!value.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--", flag, " is required"));
}

absl::Status ResolveSubset(const SubsetFlags& flags, bool subset_given, std::string& dataset,
                           std::string& recorded_subset, bool& ignore_extra) {
  HB_ASSIGN_OR_RETURN(Subset subset, ParseSubset(flags.subset));
  if (subset != Subset::kMain && flags.subset_dataset.empty()) {
    HB_RETURN_IF_ERROR(Require("dataset", dataset));
  }
  HB_ASSIGN_OR_RETURN(dataset, SubsetDatasetPath(dataset, subset, flags.subset_dataset));
  recorded_subset = subset_given ? SubsetName(subset) : "";
  ignore_extra = flags.ignore_extra_responses || subset != Subset::kMain;
  return absl::OkStatus();
}

std::string CheckpointNameFromPath(const std::string& path) {
  std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  for (const char* suffix : {".gz", ".jsonl", ".json"}) {
    if (absl::EndsWith(name, suffix) && name.size() > std::string(suffix).size()) {
      name.resize(name.size() - std::string(suffix).size());
    }
  }
  return name;
}

}  // namespace hb::commands_internal
