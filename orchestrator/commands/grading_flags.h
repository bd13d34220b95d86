// The flag groups hb-orchestrator's grading subcommands share (internal to its command line,
// orchestrator_cli.cc and offline_flags.cc): `run` and `watch` take every grading flag
// (AddGradingFlags, ResolveGradingFlags), `meta-eval` the grader, dispatch, batch and progress
// groups, `score` the subset flags, `dry-run` the batch price factor. Each Add* registers its
// flags on a cli::Command, bound to the struct it fills; the flags' names, defaults and help are
// those of docs/cli.md.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/policy_flags.h"
#include "orchestrator/run/grading_job.h"

namespace hb::commands_internal {

// The help of --examples (run, watch, sample, tasks, dry-run, score).
inline constexpr char kExamplesHelp[] =
    "the reference's random.Random(0).sample selection of N tasks (-1: every task, in file "
    "order)";

// `run`'s (and `watch`'s) flags before they become RunOptions.
struct RunFlags {
  RunOptions options;
  SubsetFlags subset;
  cli::GraderFlags grader;
  cli::LengthAdjustmentFlags length_adjustment;
  bool professional = false;
  std::vector<std::string> responses;
  // --policy NAME=MODEL@URL and the sampling flags they share.
  std::vector<std::string> policies;
  cli::PolicyFlags policy;
  int policy_max_in_flight = 64;
  std::string prompt_cache_key = "auto";
  std::string progress = "auto";
};

// The grading flags `run` and `watch` share (everything but what to grade and where to
// write it): the dataset and its subset, the grader, scoring, dispatch, batch and progress,
// bound to `flags` (which must outlive `c`). ResolveGradingFlags turns them into RunOptions.
void AddGradingFlags(cli::Command& c, RunFlags* flags);

// The flags of AddGradingFlags into `options` (run's own fields already set): progress mode,
// subset, professional grader, grader stack, prices, length adjustment, prompt cache key.
// Errors: kInvalidArgument naming the flag.
absl::Status ResolveGradingFlags(const cli::Command& command, RunFlags& flags, RunOptions& options);

// --grader, --simulated-verdicts, the grader flags and the gRPC client's security (run, watch
// and meta-eval).
void AddGraderGroup(cli::Command& c, RunOptions* o, cli::GraderFlags* grader);

// The dispatch flags of a grading job (run, watch and meta-eval).
void AddDispatchFlags(cli::Command& c, RunOptions* o);

// --progress, --progress-interval and the prices of the cost line (run, watch and meta-eval).
void AddProgressFlags(cli::Command& c, RunOptions* o, std::string* progress);

// --grader-mode and the --batch-* flags (run, watch and meta-eval).
void AddBatchFlags(cli::Command& c, RunOptions* o);

// --batch-price-factor (the batch flags and dry-run).
void AddBatchPriceFactorFlag(cli::Command& c, double* factor);

// --subset, --subset-dataset and --ignore-extra-responses (run, watch and score).
void AddSubsetFlags(cli::Command& c, SubsetFlags* flags);

}  // namespace hb::commands_internal
