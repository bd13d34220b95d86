// EmbeddedGrader: the grading stack of hb-grader (libcurl event loop, OpenAI-compatible client,
// hb::Grader, metrics) built in-process from the same GraderServerOptions, with an
// InProcessGraderClient on top and no gRPC server: what `--grader embedded` runs.
//
//   HB_ASSIGN_OR_RETURN(auto embedded, EmbeddedGrader::Start(options));
//   Dispatch through embedded->client().
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "common/base/scheduler.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "grader_client/in_process_grader_client.h"
#include "grader_service/grader_server_options.h"
#include "prometheus/registry.h"

namespace hb {

class CurlMultiHttpClient;
class OpenAiLlmClient;
class SqliteVerdictCache;

class EmbeddedGrader {
 public:
  // Loads the template, opens the verdict cache (options.verdict_cache_path, when given) and
  // starts the HTTP loop. `options.listen_address` and `max_receive_message_bytes` are ignored
  // (nothing listens). Errors: the template's load errors (kNotFound, kInvalidArgument for a
  // wrong sha256), SqliteVerdictCache::Open's (naming --verdict-cache), kInternal when libcurl
  // cannot start.
  static absl::StatusOr<std::unique_ptr<EmbeddedGrader>> Start(const GraderServerOptions& options);

  // Cancels calls in progress (their callbacks run with kCancelled) and stops the HTTP loop.
  ~EmbeddedGrader();

  // Thread-safe; valid for the EmbeddedGrader's lifetime.
  GraderClient& client() { return *client_; }
  hb::Grader& grader() { return *grader_; }
  // The HTTP loop's timers (for other pacing work in the same process).
  Scheduler& scheduler();
  GraderMetrics& metrics() { return *metrics_; }
  // The chat-completions URL the grader calls, credentials redacted (RedactUrl), for logs.
  std::string upstream_url() const;
  // What this grader grades with (MakeGraderInfo of its options); also its client's GetInfo.
  const healthbench::grader::v1::GraderInfo& info() const { return info_; }

 private:
  EmbeddedGrader() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<GraderMetrics> metrics_;
  std::unique_ptr<SqliteVerdictCache> cache_;
  std::unique_ptr<CurlMultiHttpClient> http_;
  std::unique_ptr<OpenAiLlmClient> llm_;
  std::unique_ptr<hb::Grader> grader_;
  std::unique_ptr<InProcessGraderClient> client_;
  healthbench::grader::v1::GraderInfo info_;
};

}  // namespace hb
