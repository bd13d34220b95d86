// The official HealthBench subsets (SPEC §12 `subset_name`): main, Hard and Consensus. The
// reference grades a subset by swapping in its file and scoring it exactly like main (SPEC §14:
// no special path for consensus items), so a subset is nothing but a dataset file; this header
// only says which file.
//
//   HB_ASSIGN_OR_RETURN(Subset subset, ParseSubset("hard"));
//   HB_ASSIGN_OR_RETURN(std::string path, SubsetDatasetPath(main_path, subset, ""));
//
// Thread-safe (no state). Reads only file existence.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

enum class Subset { kMain, kHard, kConsensus };

// "main", "hard" or "consensus"; else kInvalidArgument naming the choices.
absl::StatusOr<Subset> ParseSubset(absl::string_view name);

// "main", "hard", "consensus".
const char* SubsetName(Subset subset);

// The official file name: "2025-05-07-06-14-12_oss_eval.jsonl",
// "hard_2025-05-08-21-00-10.jsonl", "consensus_2025-05-09-20-00-46.jsonl".
const char* SubsetFileName(Subset subset);

// The dataset file to grade. kMain: `dataset`. Hard / Consensus: `subset_dataset` when not
// empty, else the official file (plain, then .gz) in the folder of `dataset` (where
// scripts/fetch_data.sh puts all of them). When neither exists: kNotFound naming the paths tried
// and the two fixes (scripts/fetch_data.sh, --subset-dataset FILE). `subset_dataset` with kMain
// is kInvalidArgument.
absl::StatusOr<std::string> SubsetDatasetPath(const std::string& dataset, Subset subset,
                                              const std::string& subset_dataset);

// The positions (0-based, ascending) of the tasks shard `index` of `count` owns among
// `num_tasks`: every position i with i % count == index. kInvalidArgument unless
// count >= 1 and 0 <= index < count.
absl::StatusOr<std::vector<size_t>> ShardTaskPositions(size_t num_tasks, int index, int count);

}  // namespace hb
