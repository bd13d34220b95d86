#include "grader/grader_stack.h"

#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "common/base/clock.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "common/quota/fleet_quota.h"
#include "common/quota/redis_quota_store.h"
#include "grader/grader_info.h"
#include "grader/grader_settings.h"
#include "grader/sqlite_verdict_cache.h"
#include "http/curl_http_client.h"
#include "http/url_redaction.h"
#include "llm/openai_llm_client.h"
#include "llm/quota_llm_client.h"
#include "prometheus/gauge.h"

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

// The fleet's quota on Redis (the start-up check: Redis reachable, credentials accepted), with
// its degraded gauge on `registry`.
absl::StatusOr<std::unique_ptr<FleetQuota>> ConnectQuota(const GraderStackOptions& options,
                                                         prometheus::Registry& registry) {
  const QuotaSettings& q = options.quota;
  HB_ASSIGN_OR_RETURN(RedisEndpoint endpoint, ParseRedisUrl(q.redis_url));
  if (!q.redis_password.empty()) endpoint.password = q.redis_password;
  RedisQuotaStoreOptions store_options;
  store_options.endpoint = endpoint;
  store_options.key = QuotaKey(options.llm.base_url, options.llm.api_key, q.key);
  absl::StatusOr<std::unique_ptr<RedisQuotaStore>> store = RedisQuotaStore::Connect(store_options);
  if (!store.ok()) {
    const bool refused = store.status().code() == absl::StatusCode::kPermissionDenied;
    return absl::Status(
        refused ? absl::StatusCode::kPermissionDenied : absl::StatusCode::kFailedPrecondition,
        absl::StrCat("--quota-redis: ", store.status().message(),
                     refused ? "" : " (start Redis there, or fix --quota-redis)"));
  }
  prometheus::Gauge& degraded =
      prometheus::BuildGauge()
          .Name("hb_grader_quota_degraded")
          .Help(
              "1 while the fleet quota's Redis is unavailable and this process admits upstream "
              "calls at --quota-fallback-share of the known limits on its own")
          .Register(registry)
          .Add({});
  FleetQuotaOptions quota_options;
  quota_options.configured = {q.rpm, q.tpm};
  quota_options.fallback_share = q.fallback_share;
  quota_options.name = store_options.key;
  quota_options.on_degraded = [&degraded](bool d) { degraded.Set(d ? 1 : 0); };
  HB_LOG_INFO("fleet quota {} on {}: priority {}, rpm {}, tpm {} (0: learned)", store_options.key,
              RedisEndpointName(endpoint), std::string(QuotaPriorityName(q.priority)), q.rpm,
              q.tpm);
  return std::make_unique<FleetQuota>(*std::move(store), std::move(quota_options));
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
  stack->metrics_->SetUpstreamCap(options.llm.max_upstream_in_flight);
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
  LlmClient* upstream = stack->llm_.get();
  if (!options.quota.redis_url.empty()) {
    HB_ASSIGN_OR_RETURN(stack->quota_, ConnectQuota(options, *stack->registry_));
    QuotaLlmClientOptions quota_llm_options;
    quota_llm_options.priority = options.quota.priority;
    quota_llm_options.max_output_tokens = options.settings.max_tokens;
    stack->quota_llm_ = std::make_unique<QuotaLlmClient>(*stack->llm_, *stack->quota_,
                                                         *stack->http_, quota_llm_options);
    upstream = stack->quota_llm_.get();
  }

  stack->info_ = MakeGraderInfo(options.settings, grader_template.sha256(), options.llm.base_url,
                                HB_PROJECT_VERSION);
  auto bitgen = std::make_shared<absl::BitGen>();
  stack->grader_ = std::make_unique<hb::Grader>(
      *upstream, *stack->http_, Clock::Real(),
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
  quota_llm_.reset();
  quota_.reset();
  llm_.reset();
  cache_.reset();
}

}  // namespace hb
