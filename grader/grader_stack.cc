#include "grader/grader_stack.h"

#include <utility>

#include "absl/random/random.h"
#include "common/base/clock.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "grader/grader_info.h"
#include "grader/grader_settings.h"
#include "grader/sqlite_verdict_cache.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"

namespace hb {
namespace {

absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> StartHttp(const LlmOptions& llm) {
  CurlHttpClientOptions http_options;
  http_options.max_in_flight = llm.max_upstream_in_flight;
  http_options.verify_tls = llm.verify_tls;
  http_options.ca_file = llm.ca_file;
  return CurlMultiHttpClient::Create(http_options);
}

GraderConfig ConfigOf(const GraderStackOptions& options) {
  GraderConfig config;
  config.settings = options.settings;
  config.retry = options.retry;
  config.limits = options.limits;
  config.attempt_timeout = options.llm.attempt_timeout;
  return config;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraderStack>> GraderStack::Start(const GraderStackOptions& options) {
  HB_ASSIGN_OR_RETURN(
      GraderTemplate grader_template,
      GraderTemplate::Load(options.template_path, options.require_reference_template));
  for (const std::string& warning : ApiKeyWarnings(options.llm)) HB_LOG_WARN("{}", warning);
  std::unique_ptr<GraderStack> stack(new GraderStack());
  stack->registry_ =
      options.registry != nullptr ? options.registry : std::make_shared<prometheus::Registry>();
  stack->metrics_ = std::make_unique<GraderMetrics>(*stack->registry_);
  if (!options.verdict_cache_path.empty()) {
    HB_ASSIGN_OR_RETURN(stack->cache_, SqliteVerdictCache::Open(options.verdict_cache_path));
  }
  HB_ASSIGN_OR_RETURN(stack->http_, StartHttp(options.llm));

  OpenAiLlmClientOptions llm_options;
  llm_options.base_url = options.llm.base_url;
  llm_options.api_key = options.llm.api_key;
  llm_options.metrics = stack->metrics_.get();
  llm_options.api = options.settings.api;
  llm_options.headers = WireHeaders(options.settings.headers);
  stack->llm_ = std::make_unique<OpenAiLlmClient>(*stack->http_, llm_options);

  stack->info_ = MakeGraderInfo(options.settings, grader_template.sha256(), options.llm.base_url,
                                HB_PROJECT_VERSION);
  auto bitgen = std::make_shared<absl::BitGen>();
  stack->grader_ = std::make_unique<hb::Grader>(
      *stack->llm_, *stack->http_, Clock::Real(),
      [bitgen] { return absl::Uniform(absl::IntervalClosed, *bitgen, 0.0, 1.0); },
      std::move(grader_template), ConfigOf(options), stack->metrics_.get(), stack->cache_.get());
  return stack;
}

Scheduler& GraderStack::scheduler() { return *http_; }

std::string GraderStack::upstream_url() const { return RedactUrl(llm_->url()); }

GraderStack::~GraderStack() {
  // The HTTP loop goes first: it may still run a completion that reaches the grader.
  http_.reset();
  grader_.reset();
  llm_.reset();
  cache_.reset();
}

}  // namespace hb
