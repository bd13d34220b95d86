#include "orchestrator/run/policy_checkpoints.h"

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

}  // namespace hb
