// hb-orchestrator's command line: its subcommands (run, meta-eval, sample, tasks, dry-run, score,
// merge, compare) and their flags on cli::Program, and the translation of the parsed flags into
// each subcommand's Options struct. Linked only by hb-orchestrator's main.cc and its tests
// (libraries take Options).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "orchestrator/commands/meta_eval_command.h"
#include "orchestrator/commands/run_command.h"
#include "orchestrator/commands/sample_command.h"

namespace hb {

// hb-orchestrator ARGS: parses, runs the subcommand, returns the exit code. Usage errors print
// one line on stderr and return 2; an offline subcommand's failure prints
// "hb-orchestrator <command>: <message>" and returns 2; `run` returns RunWithOptions' code,
// `meta-eval` RunMetaEval's.
int OrchestratorMain(int argc, char** argv);

// The help of `hb-orchestrator [subcommand] --help`; "" for the program's.
std::string OrchestratorHelp(const std::string& subcommand);

// `hb-orchestrator run ARGS` up to the run: the flags as validated RunOptions (the grader
// options resolved and complete). --shard-index defaults to $JOB_COMPLETION_INDEX when set.
// Errors: kInvalidArgument with the message the binary prints.
absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args);

// `hb-orchestrator meta-eval ARGS` up to the run, as ParseRunArgs.
absl::StatusOr<MetaEvalCommandOptions> ParseMetaEvalArgs(const std::vector<std::string>& args);

}  // namespace hb
