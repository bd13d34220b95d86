// GraderServerOptions: how a grader is built and served (upstream, settings, retries, limits,
// template, listen address and security), with its validation and derived limits; shared by
// hb-grader, hb-env and the embedded grader of `hb-orchestrator run` (the flags that fill it
// live in cli/). A header without the gRPC server, so in-process graders need not link it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/healthbench/types.h"
#include "common/retry/retry_policy.h"
#include "grader/grader.h"
#include "prometheus/registry.h"
#include "security/transport_security.h"

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
// EmbeddedGrader::Start (every grader that calls upstream) logs them once at start.
std::vector<std::string> ApiKeyWarnings(const LlmOptions& llm);

struct GraderServerOptions {
  // "host:port"; port 0 picks a free port (see GraderServer::port()).
  std::string listen_address = "0.0.0.0:50051";
  LlmOptions llm;
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
  // RPCs in progress at once (`--max-concurrent-rpcs`); past it RESOURCE_EXHAUSTED with a
  // retry delay. 0: no limit.
  int max_concurrent_rpcs = 1024;
  // Rubric items admitted beyond llm.max_upstream_in_flight, waiting for an upstream slot
  // (`--max-upstream-queue`); a request that would queue more is RESOURCE_EXHAUSTED with a
  // retry delay. 0: no limit.
  int max_upstream_queue = 8192;
  // Deadline of an RPC whose client set none (`--default-deadline`).
  absl::Duration default_deadline = absl::Minutes(10);
  // Largest request accepted, in bytes.
  int max_receive_message_bytes = 64 << 20;
  // Serve grpc.reflection.v1 and v1alpha ServerReflection (lists the services and their schemas to
  // any client). Off by default.
  bool reflection = false;
  // TLS, mTLS, bearer tokens and the listen policy (security/transport_security.h): a
  // non-loopback address without tokens or mTLS is refused unless security.allow_insecure.
  ServerSecurityOptions security;
};

// Checks `options` (kInvalidArgument naming the flag that sets the bad field, never the API
// key) and fills the fields derived from others: retry.min_attempt_time is capped at
// llm.attempt_timeout, and max_receive_message_bytes is what a gradable request can need: twice
// max_prompt_bytes (a conversation and reply that fit one prompt, plus its rubric), at least
// max_message_bytes + 1 MiB, at most 1 GiB (8 MiB with the defaults). A bigger request could
// only be refused after parsing, at several times its size in memory; gRPC refuses it first
// (RESOURCE_EXHAUSTED). Thread-safe.
absl::StatusOr<GraderServerOptions> CompleteGraderServerOptions(GraderServerOptions options);

}  // namespace hb
