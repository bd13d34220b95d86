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

// The responses file name without folders and without .gz / .jsonl / .json.
std::string CheckpointNameFromPath(const std::string& path);

}  // namespace hb::commands_internal
