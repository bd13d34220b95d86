// PolicyOptions: one served policy model as `sample` and `run --policy` ask it (endpoint, key,
// request settings, concurrency, retries, timeouts), and the checks both commands make on it
// and on its replies.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/retry/retry_policy.h"
#include "llm/endpoint_preflight.h"
#include "llm/llm_client.h"
#include "orchestrator/policy/policy_request.h"
#include "orchestrator/policy/policy_sampler.h"
#include "orchestrator/policy/sampled_reply.h"

namespace hb {

struct PolicyOptions {
  // E.g. http://127.0.0.1:8000/v1; requests go to {base_url}/chat/completions.
  std::string policy_base_url;
  PolicyRequestSettings request;
  // Bearer token; never logged.
  std::string api_key;
  // Calls in flight at most, the probe's included.
  int max_in_flight = 64;
  bool adaptive_concurrency = true;
  RetryPolicy retry;
  absl::Duration attempt_timeout = absl::Seconds(300);
  // Timeout of the probe request (the first task, sent once without retries).
  absl::Duration probe_timeout = absl::Seconds(60);
  // Prefix of progress and summary lines on stderr ("sample" or "sample <checkpoint>").
  std::string log_name = "sample";
  // How errors name the flag that gave policy_base_url ("--policy-base-url"; `run`: "--policy
  // NAME").
  std::string endpoint_flag = "--policy-base-url";
};

// kInvalidArgument naming the flag behind the first bad field (URL, in flight, request).
absl::Status ValidatePolicyOptions(const PolicyOptions& options);

// The sampler settings of `options` (in flight, adaptive, retries, attempt timeout, a seeded
// jitter source).
PolicySamplerOptions MakePolicySamplerOptions(const PolicyOptions& options);

// The policy endpoint as PreflightEndpoint (llm/endpoint_preflight.h) checks it before the first
// request: options.endpoint_flag, and $POLICY_API_KEY or --policy-api-key-file for the key.
EndpointPreflight PolicyEndpoint(const PolicyOptions& options);

// kFailedPrecondition when `content`, a reply of the policy, is a grader verdict (it parses as
// the grader's reply does: a JSON object with a boolean "criteria_met",
// common/grading/grader_reply.h): the endpoint is a grader route, and grading its verdicts as
// answers would score nothing. The message names the URL, options.endpoint_flag and the fix.
absl::Status CheckNotGraderVerdict(const PolicyOptions& options, absl::string_view content);

// The probe's verdict on the configuration: kFailedPrecondition "probe request to URL failed:
// ... (<what to check>)" for a failure no retry can fix (unreachable, 400/401/403/404); OK for
// a transient one (the task is then sampled again like any other).
absl::Status PolicyProbeError(const PolicyOptions& options, const absl::Status& status);

// A policy reply as written to the responses file (the model as reported, else as requested).
SampledReply ToSampledReply(const std::string& prompt_id, const PolicyOptions& options,
                            ChatResult result);

}  // namespace hb
