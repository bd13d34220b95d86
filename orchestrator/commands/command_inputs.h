// Loading and writing helpers shared by the offline subcommands (offline_commands.h).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"

namespace hb::commands_internal {

// kInvalidArgument unless `examples` is -1 (every task) or positive.
absl::Status CheckExamples(int64_t examples);

// Applies the reference's --examples selection when `examples` >= 0. Load responses and
// verdicts against the full dataset BEFORE calling this (they may cover every task).
void ApplyExamples(Dataset& dataset, int64_t examples);

// Writes `contents` to `path` atomically, creating its parent folders.
absl::Status WriteOutput(const std::string& path, absl::string_view contents);

// kInvalidArgument "--<flag> is required" when `value` is empty.
absl::Status Require(absl::string_view flag, const std::string& value);

// The --subset / --subset-dataset / --ignore-extra-responses flags of run and score.
struct SubsetFlags {
  std::string subset = "main";
  std::string subset_dataset;
  bool ignore_extra_responses = false;
};

// Resolves `flags` against the --dataset value `dataset` (SubsetDatasetPath): replaces `dataset`
// with the file to grade, sets `recorded_subset` to the subset's name when --subset was given
// (else leaves it empty) and `ignore_extra` to whether responses outside that file are skipped
// (always for hard and consensus: their responses usually answer the whole set).
absl::Status ResolveSubset(const SubsetFlags& flags, bool subset_given, std::string& dataset,
                           std::string& recorded_subset, bool& ignore_extra);

// The responses file name without folders and without .gz / .jsonl / .json.
std::string CheckpointNameFromPath(const std::string& path);

}  // namespace hb::commands_internal
