// GraderStack: everything that grades a rubric item in this process, built from
// GraderStackOptions: the libcurl event loop, the OpenAI-compatible client, hb::Grader, the
// verdict cache and the metrics. No transport: hb-grader serves it over gRPC
// (grader_service/grader_server.h); an EmbeddedGrader (grader_client/embedded_grader.h) puts an
// in-process client on it for hb-env and `hb-orchestrator run --grader embedded`.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/base/scheduler.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "grader/grader_stack_options.h"
#include "healthbench/grader/v1/grader.pb.h"
#include "prometheus/registry.h"

namespace hb {

class CurlMultiHttpClient;
class FleetQuota;
class OpenAiLlmClient;
class QuotaLlmClient;
class SqliteVerdictCache;

class GraderStack {
 public:
  // Loads the template, opens the verdict cache (options.verdict_cache_path, when given), logs
  // ApiKeyWarnings once and starts the HTTP loop. Metrics go to options.registry (a private
  // registry when null). With options.quota.redis_url, every upstream attempt is admitted by the
  // fleet's quota (llm/quota_llm_client.h) and the gauge hb_grader_quota_degraded says when it
  // runs on its local fallback. Errors: the template's load errors (kNotFound,
  // kInvalidArgument for a wrong sha256), SqliteVerdictCache::Open's (naming --verdict-cache),
  // kFailedPrecondition when Redis cannot be reached and kPermissionDenied when it refuses the
  // credentials (both naming --quota-redis: the binaries exit 2), kInternal when libcurl
  // cannot start.
  static absl::StatusOr<std::unique_ptr<GraderStack>> Start(const GraderStackOptions& options);

  // Stops the HTTP loop. Callers cancel their calls first (a Grader call cancelled completes
  // inline), so no callback runs after this returns.
  ~GraderStack();

  // Thread-safe; valid for the stack's lifetime.
  hb::Grader& grader() { return *grader_; }
  // The HTTP loop's timers (for other pacing work in the same process).
  Scheduler& scheduler();
  GraderMetrics& metrics() { return *metrics_; }
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  // The URL the grader calls, credentials redacted (RedactUrl), for logs.
  std::string upstream_url() const;
  // What this stack grades with (MakeGraderInfo of its options).
  const healthbench::grader::v1::GraderInfo& info() const { return info_; }

 private:
  GraderStack() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<GraderMetrics> metrics_;
  std::unique_ptr<SqliteVerdictCache> cache_;
  std::unique_ptr<CurlMultiHttpClient> http_;
  std::unique_ptr<OpenAiLlmClient> llm_;
  std::unique_ptr<FleetQuota> quota_;
  std::unique_ptr<QuotaLlmClient> quota_llm_;
  std::unique_ptr<hb::Grader> grader_;
  healthbench::grader::v1::GraderInfo info_;
};

}  // namespace hb
