// `hb-orchestrator run --policy NAME=MODEL@URL`: checkpoints that are served models rather than
// responses files. Parsing and naming only: each joins the run's checkpoints as
// `--responses NAME=RUN_DIR/NAME/responses.jsonl` (written by the run from its journaled
// replies) and as a PolicySource (RunOptions::policies), which the run samples while it grades
// (grading_job.h).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "orchestrator/run/grading_job.h"

namespace hb {

struct PolicyCheckpoint {
  std::string name;
  std::string model;
  std::string base_url;
};

// Parses "NAME=MODEL@URL" (the last '@' splits MODEL from URL; NAME as for --responses).
// kInvalidArgument naming the value otherwise.
absl::StatusOr<PolicyCheckpoint> ParsePolicyCheckpoint(const std::string& spec);

// Where checkpoint `name`'s sampled responses go: RunDir()/NAME/responses.jsonl.
std::string PolicyResponsesPath(const RunOptions& run, const std::string& name);

// The --responses spec "NAME=PolicyResponsesPath(...)" for each policy, for
// ParseCheckpointSpecs (which rejects a name used twice, across --responses and --policy).
std::vector<std::string> PolicyResponseSpecs(const RunOptions& run,
                                             const std::vector<PolicyCheckpoint>& policies);

}  // namespace hb
