#include "common/healthbench/subsets.h"

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hb {

namespace {

struct SubsetInfo {
  Subset subset;
  const char* name;
  const char* file;
};

constexpr SubsetInfo kSubsets[] = {
    {Subset::kMain, "main", "2025-05-07-06-14-12_oss_eval.jsonl"},
    {Subset::kHard, "hard", "hard_2025-05-08-21-00-10.jsonl"},
    {Subset::kConsensus, "consensus", "consensus_2025-05-09-20-00-46.jsonl"},
};

const SubsetInfo& Info(Subset subset) {
  for (const SubsetInfo& info : kSubsets) {
    if (info.subset == subset) return info;
  }
  return kSubsets[0];
}

}  // namespace

absl::StatusOr<Subset> ParseSubset(absl::string_view name) {
  for (const SubsetInfo& info : kSubsets) {
    if (name == info.name) return info.subset;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--subset: expected main, hard or consensus, got '", name, "'"));
}

const char* SubsetName(Subset subset) { return Info(subset).name; }

const char* SubsetFileName(Subset subset) { return Info(subset).file; }

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

absl::StatusOr<std::vector<size_t>> ShardTaskPositions(size_t num_tasks, int index, int count) {
  if (count < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--shard-count must be >= 1, got ", count));
  }
  if (index < 0 || index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard-index must be in [0, ", count, "), got ", index));
  }
  std::vector<size_t> out;
  for (size_t i = static_cast<size_t>(index); i < num_tasks; i += static_cast<size_t>(count)) {
    out.push_back(i);
  }
  return out;
}

}  // namespace hb
