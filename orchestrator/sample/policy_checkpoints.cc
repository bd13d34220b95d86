#include "orchestrator/sample/policy_checkpoints.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hb {

absl::StatusOr<PolicyCheckpoint> ParsePolicyCheckpoint(const std::string& spec) {
  const size_t eq = spec.find('=');
  const size_t at = spec.rfind('@');
  if (eq == std::string::npos || eq == 0 || at == std::string::npos || at < eq + 2 ||
      at + 1 == spec.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--policy takes NAME=MODEL@URL (e.g. step-100=my-model@http://vllm:8000/v1), got '", spec,
        "'"));
  }
  return PolicyCheckpoint{spec.substr(0, eq), spec.substr(eq + 1, at - eq - 1),
                          spec.substr(at + 1)};
}

std::string PolicyResponsesPath(const RunOptions& run, const std::string& name) {
  return absl::StrCat(run.RunDir(), "/", name, "/responses.jsonl");
}

std::vector<std::string> PolicyResponseSpecs(const RunOptions& run,
                                             const std::vector<PolicyCheckpoint>& policies) {
  std::vector<std::string> specs;
  for (const PolicyCheckpoint& policy : policies) {
    specs.push_back(absl::StrCat(policy.name, "=", PolicyResponsesPath(run, policy.name)));
  }
  return specs;
}

int RunWithPolicies(const RunOptions& run, const std::vector<PolicyCheckpoint>& policies,
                    const SampleOptions& sampling) {
  int sample_code = kSampleExitOk;
  for (const PolicyCheckpoint& policy : policies) {
    SampleOptions options = sampling;
    options.dataset = run.dataset;
    options.examples = run.examples;
    options.shard_index = run.shard_index;
    options.shard_count = run.shard_count;
    options.out = PolicyResponsesPath(run, policy.name);
    options.policy_base_url = policy.base_url;
    options.request.model = policy.model;
    options.log_name = absl::StrCat("sample ", policy.name);
    const int code = RunSample(options);
    if (code != kSampleExitOk && code != kSampleExitTasksFailed) return code;
    sample_code = std::max(sample_code, code);
  }
  const int run_code = RunWithOptions(run);
  if (run_code == kRunExitOk && sample_code == kSampleExitTasksFailed) return kRunExitRowsFailed;
  return run_code;
}

}  // namespace hb
