// `hb-orchestrator run --policy NAME=MODEL@URL`: checkpoints that are served models rather than
// responses files. Each is sampled (SampleToFile, with its journal) into
// RUN_DIR/NAME/responses.jsonl, which then joins the run as `--responses NAME=that file`; the
// grading run journals its verdicts as usual. Running the same command again resumes both: the
// sampling journal skips the tasks that have a reply, the grading journal the rows graded.
//
// Today the policies are sampled one after the other, then graded (correct and resumable; not
// yet pipelined into the grading dispatcher).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "orchestrator/run/run_command.h"
#include "orchestrator/sample/sample_command.h"

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

// Samples every policy (settings from `sampling`: request shape, key, retries, in flight),
// then runs `run` (whose checkpoints already include PolicyResponseSpecs). Returns the exit
// code: a sampling configuration error stops before grading (2); tasks a policy could not
// answer are graded as missing, and the code is at least 3.
int RunWithPolicies(const RunOptions& run, const std::vector<PolicyCheckpoint>& policies,
                    const SampleOptions& sampling);

}  // namespace hb
