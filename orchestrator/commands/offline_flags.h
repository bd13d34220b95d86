// The command line of hb-orchestrator's offline subcommands (internal to orchestrator_cli.cc):
// `tasks`, `dry-run`, `score`, `merge` and `compare`, their flags on cli::Program and the
// Options structs of offline_commands.h filled from them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"

namespace hb::commands_internal {

// The offline subcommands' flags and what they fill. Not copyable: the program's flags point
// into it. One per parse.
class OfflineFlags {
 public:
  OfflineFlags() = default;
  OfflineFlags(const OfflineFlags&) = delete;
  OfflineFlags& operator=(const OfflineFlags&) = delete;

  // Adds tasks, dry-run, score, merge and compare, in that order, to `program`, their flags
  // bound to this object (which must outlive the parse).
  void AddTo(cli::Program& program);

  // After the parse: runs the offline `command` (tasks, dry-run, compare or score) from its
  // flags; returns the text to print. Errors: kInvalidArgument naming a flag, the command's
  // own errors, kInternal for another command.
  absl::StatusOr<std::string> Run(const std::string& command);

  // After the parse: `merge` from its flags (--responses NAME=PATH parsed here; kInvalidArgument
  // for a value of another form or a checkpoint named twice).
  absl::StatusOr<MergeResult> RunMergeFromFlags();

 private:
  void AddTasks(cli::Program& program);
  void AddDryRun(cli::Program& program);
  void AddScore(cli::Program& program);
  void AddMerge(cli::Program& program);
  void AddCompare(cli::Program& program);
  // The dry-run and score flags beyond their Options fields, resolved into them.
  absl::Status ResolveDryRunFlags();
  absl::Status ResolveScoreFlags();

  TasksOptions tasks_;
  DryRunOptions dry_run_;
  std::string dry_run_cache_key_ = "none";
  GraderApiChoice dry_run_api_ = GraderApiChoice::kAuto;
  std::vector<std::string> dry_run_headers_;
  int64_t dry_run_reasoning_tokens_ = 0;
  bool dry_run_professional_ = false;
  cli::Command* dry_run_command_ = nullptr;
  GraderApiChoice score_api_ = GraderApiChoice::kAuto;
  std::vector<std::string> score_headers_;
  cli::LengthAdjustmentFlags score_length_adjustment_;
  bool score_professional_ = false;
  ScoreOptions score_;
  cli::Command* score_command_ = nullptr;
  SubsetFlags score_subset_;
  MergeOptions merge_;
  std::vector<std::string> merge_responses_;
  CompareOptions compare_;
};

}  // namespace hb::commands_internal
