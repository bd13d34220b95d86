// GraderStackOptions: how a grading stack is built (upstream, model settings, retries, limits,
// template, verdict cache, metrics registry), with its validation. One struct for every process
// that grades: hb-grader (which adds listen, security and RPC limits, grader_service/
// grader_server_options.h), hb-env's and `hb-orchestrator run`'s embedded grader. The flags that
// fill it live in cli/grader_flags.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/healthbench/types.h"
#include "common/quota/quota_store.h"
#include "common/retry/retry_policy.h"
#include "grader/grader.h"
#include "llm/endpoint_preflight.h"
#include "prometheus/registry.h"

namespace hb {

// How the upstream model is reached.
struct LlmOptions {
  std::string base_url = "https://api.openai.com/v1";
  // Bearer token; empty sends none (local endpoints). Never logged.
  std::string api_key;
  // Upper bound of one upstream attempt.
  absl::Duration attempt_timeout = absl::Seconds(120);
  // Upstream requests in flight at once; more wait in a queue.
  int max_upstream_in_flight = 2048;
  bool verify_tls = true;
  std::string ca_file;
  // base_url was chosen on purpose (--llm-base-url given): only for ApiKeyWarnings.
  bool base_url_given = false;
};

// One line per way `llm.api_key` could go somewhere its owner did not choose (empty without a
// key): to the default base URL (api.openai.com) because --llm-base-url was not given, or over
// plain http:// to a host that is not this machine. Never contains the key; URLs are redacted.
// GraderStack::Start (every grader that calls upstream) logs them once at start.
std::vector<std::string> ApiKeyWarnings(const LlmOptions& llm);

// The upstream as PreflightEndpoint (llm/endpoint_preflight.h) checks it before the first
// request, named by the grader flags (--llm-base-url; $OPENAI_API_KEY or --llm-api-key-file).
// `headers` (--llm-header) count as credentials: Azure OpenAI and gateways take their key in a
// header of their own (api-key), with no bearer token.
EndpointPreflight LlmEndpoint(const LlmOptions& llm, const std::vector<GraderHeader>& headers = {});

// The fleet's shared provider quota (--quota-*): every upstream attempt of this stack is
// admitted by a FleetQuota on Redis (llm/quota_llm_client.h). Off when redis_url is empty.
struct QuotaSettings {
  // --quota-redis: redis://[[user]:password@]host[:port][/db] or unix:///path[?db=N].
  std::string redis_url;
  // From --quota-redis-password-file (wins over one in the URL). Never logged.
  std::string redis_password;
  // --quota-key: the budget's name instead of the base URL + sha256 of the API key.
  std::string key;
  // --quota-rpm, --quota-tpm; 0: learned from the provider's x-ratelimit-limit-* headers.
  int64_t rpm = 0;
  int64_t tpm = 0;
  QuotaPriority priority = QuotaPriority::kBatch;
  // --quota-fallback-share: the share of the known limits used alone while Redis is down.
  double fallback_share = 0.25;
};

struct GraderStackOptions {
  LlmOptions llm;
  QuotaSettings quota;
  // Model, temperature, max_tokens, system message (SPEC §5 defaults).
  GraderSettings settings;
  RetryPolicy retry;
  GraderLimits limits;
  std::string template_path = "data/grader_template.txt";
  bool require_reference_template = true;
  // The verdict cache's SQLite file (`--verdict-cache`, grader/sqlite_verdict_cache.h); empty:
  // no cache, every item is graded upstream.
  std::string verdict_cache_path;
  // Where metrics are registered; a private registry when null.
  std::shared_ptr<prometheus::Registry> registry;
};

// kInvalidArgument naming the --quota-* flag when `quota` is inconsistent: a bad URL (never
// echoed: it may hold a password), negative limits, a fallback share outside (0, 1], or quota
// flags without --quota-redis. Part of CompleteGraderStackOptions.
absl::Status CheckQuotaSettings(const QuotaSettings& quota);

// Checks `options` (kInvalidArgument naming the flag that sets the bad field, never the API
// key) and fills the fields derived from others: retry.min_attempt_time is capped at
// llm.attempt_timeout. Thread-safe.
absl::StatusOr<GraderStackOptions> CompleteGraderStackOptions(GraderStackOptions options);

}  // namespace hb
