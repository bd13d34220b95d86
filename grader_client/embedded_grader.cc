#include "grader_client/embedded_grader.h"

#include <utility>

#include "absl/random/random.h"
#include "common/base/clock.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "grader/sqlite_verdict_cache.h"
#include "grader_client/grader_info.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"

namespace hb {

absl::StatusOr<std::unique_ptr<EmbeddedGrader>> EmbeddedGrader::Start(
    const GraderServerOptions& options) {
  HB_ASSIGN_OR_RETURN(
      GraderTemplate grader_template,
      GraderTemplate::Load(options.template_path, options.require_reference_template));
  for (const std::string& warning : ApiKeyWarnings(options.llm)) HB_LOG_WARN("{}", warning);
  std::unique_ptr<EmbeddedGrader> embedded(new EmbeddedGrader());
  embedded->registry_ =
      options.registry != nullptr ? options.registry : std::make_shared<prometheus::Registry>();
  embedded->metrics_ = std::make_unique<GraderMetrics>(*embedded->registry_);
  if (!options.verdict_cache_path.empty()) {
    HB_ASSIGN_OR_RETURN(embedded->cache_, SqliteVerdictCache::Open(options.verdict_cache_path));
  }

  CurlHttpClientOptions http_options;
  http_options.max_in_flight = options.llm.max_upstream_in_flight;
  http_options.verify_tls = options.llm.verify_tls;
  http_options.ca_file = options.llm.ca_file;
  HB_ASSIGN_OR_RETURN(embedded->http_, CurlMultiHttpClient::Create(http_options));

  OpenAiLlmClientOptions llm_options;
  llm_options.base_url = options.llm.base_url;
  llm_options.api_key = options.llm.api_key;
  llm_options.metrics = embedded->metrics_.get();
  llm_options.api = options.settings.api;
  embedded->llm_ = std::make_unique<OpenAiLlmClient>(*embedded->http_, llm_options);

  GraderConfig config;
  config.settings = options.settings;
  config.retry = options.retry;
  config.limits = options.limits;
  config.attempt_timeout = options.llm.attempt_timeout;
  embedded->info_ = MakeGraderInfo(options.settings, grader_template.sha256(), options.llm.base_url,
                                   HB_PROJECT_VERSION);
  auto bitgen = std::make_shared<absl::BitGen>();
  embedded->grader_ = std::make_unique<hb::Grader>(
      *embedded->llm_, *embedded->http_, Clock::Real(),
      [bitgen] { return absl::Uniform(absl::IntervalClosed, *bitgen, 0.0, 1.0); },
      std::move(grader_template), config, embedded->metrics_.get(), embedded->cache_.get());
  embedded->client_ =
      std::make_unique<InProcessGraderClient>(*embedded->grader_, Clock::Real(), embedded->info_);
  return embedded;
}

Scheduler& EmbeddedGrader::scheduler() { return *http_; }

std::string EmbeddedGrader::upstream_url() const { return RedactUrl(llm_->url()); }

EmbeddedGrader::~EmbeddedGrader() {
  // Cancelling a Grader call completes it inline, so the client's destructor (cancel, then wait
  // for callbacks) returns promptly; only then may the HTTP loop and the grader go.
  client_.reset();
  http_.reset();
  grader_.reset();
  llm_.reset();
  cache_.reset();
}

}  // namespace hb
