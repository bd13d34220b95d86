#include "common/healthbench/subsets.h"

#include <filesystem>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hb {

absl::StatusOr<Subset> ParseSubset(absl::string_view name) {
  if (name == "main") return Subset::kMain;
  if (name == "hard") return Subset::kHard;
  if (name == "consensus") return Subset::kConsensus;
  return absl::InvalidArgumentError(
      absl::StrCat("--subset: expected main, hard or consensus, got '", name, "'"));
}

const char* SubsetName(Subset subset) {
  switch (subset) {
    case Subset::kHard:
      return "hard";
    case Subset::kConsensus:
      return "consensus";
    case Subset::kMain:
      break;
  }
  return "main";
}

const char* SubsetFileName(Subset subset) {
  switch (subset) {
    case Subset::kHard:
      return "hard_2025-05-08-21-00-10.jsonl";
    case Subset::kConsensus:
      return "consensus_2025-05-09-20-00-46.jsonl";
    case Subset::kMain:
      break;
  }
  return "2025-05-07-06-14-12_oss_eval.jsonl";
}

absl::StatusOr<std::string> SubsetDatasetPath(const std::string& dataset, Subset subset,
                                              const std::string& subset_dataset) {
  if (subset == Subset::kMain) {
    if (!subset_dataset.empty()) {
      return absl::InvalidArgumentError(
          "--subset-dataset needs --subset hard or --subset consensus");
    }
    return dataset;
  }
  if (!subset_dataset.empty()) return subset_dataset;
  const size_t slash = dataset.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : dataset.substr(0, slash + 1);
  const std::string plain = absl::StrCat(folder, SubsetFileName(subset));
  std::error_code error;
  for (const std::string& candidate : {plain, plain + ".gz"}) {
    if (std::filesystem::exists(candidate, error)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(
      "--subset ", SubsetName(subset), ": no ", plain,
      " (or .gz) beside --dataset; get it with "
      "scripts/fetch_data.sh, or name the ",
      SubsetName(subset),
      " file with --subset-dataset FILE (or give it as --dataset with --ignore-extra-responses)"));
}

}  // namespace hb
