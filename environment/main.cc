// hb-env: HealthBench as an environment. See environment/healthbench_environment.h.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/base/flags_usage.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "environment/env_metrics.h"
#include "environment/grpc/env_server.h"
#include "environment/healthbench_environment.h"
#include "environment/sqlite_result_store.h"
#include "grader_client/embedded_grader.h"
#include "grader_client/grpc_grader_client.h"
#include "grader_service/grader_flags.h"
#include "http/curl_http_client.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "environment/ors/ors_http_server.h"

ABSL_FLAG(std::vector<std::string>, split, {},
          "NAME=PATH of a HealthBench JSONL file served as split NAME; repeat the flag for "
          "more splits (at least one)");
ABSL_FLAG(std::string, grader, "embedded",
          "'embedded' (grade in-process, configured by the --llm-* flags) or a gRPC target of "
          "hb-grader replicas (dns:///host:port, ipv4:a:p,b:p; round_robin)");
ABSL_FLAG(std::string, listen, "127.0.0.1:50061",
          "gRPC listen address (host:port; port 0 picks one)");
ABSL_FLAG(std::string, http_listen, "127.0.0.1:8080",
          "Open Reward Standard HTTP listen address (host:port; port 0 picks one)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9465",
          "Prometheus /metrics listen address; empty disables it");
ABSL_FLAG(int64_t, cache_entries, 100000,
          "Graded results kept in memory (LRU) to answer resubmissions; 0 turns the cache off");
ABSL_FLAG(std::string, cache_db, "",
          "SQLite file where cached results persist (reloaded at start); empty keeps them in "
          "memory only");
ABSL_FLAG(int64_t, max_pending, 4096,
          "Distinct submissions graded at once; beyond it Submit is RESOURCE_EXHAUSTED");
ABSL_FLAG(int64_t, max_reply_bytes, 1 << 20, "Largest reply accepted, in bytes");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30),
          "On SIGTERM/SIGINT, how long RPCs in progress may finish before they are cancelled");
ABSL_FLAG(std::string, log_level, "info", "debug, info, warn or error");

namespace {

constexpr char kUsage[] = R"(HealthBench as an environment.

Loads HealthBench JSONL files as named splits (--split NAME=PATH, repeatable) and serves them
over gRPC (healthbench.env.v1.Environment, plus grpc.health.v1 and reflection) and the Open
Reward Standard HTTP API: list tasks, read a task's prompt, submit a reply and get its reward
(the reference's per-task score) with per-item verdicts. Grading uses hb-grader's code,
in-process (--grader embedded) or on hb-grader replicas. Results are cached by (task, reply,
grader); identical submissions in flight share one grading.

Prints "grpc listening on HOST:PORT" and "http listening on HOST:PORT" when ready.
SIGTERM/SIGINT: report NOT_SERVING, drain for --drain-timeout, exit 0.

Usage: hb-env --split test=data/oss_eval.jsonl [--grader embedded] [--listen 127.0.0.1:50061] ...)";

// Every --split value in order (Abseil keeps only the last occurrence of a repeated flag).
std::vector<std::string> SplitFlagValues(int argc, char** argv) {
  std::vector<std::string> values;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    for (const char* name : {"--split=", "-split="}) {
      if (absl::StartsWith(arg, name)) values.push_back(arg.substr(std::string(name).size()));
    }
    if ((arg == "--split" || arg == "-split") && i + 1 < argc) values.push_back(argv[++i]);
  }
  return values;
}

absl::StatusOr<std::vector<hb::env::SplitSpec>> SplitSpecs(const std::vector<std::string>& values) {
  std::vector<hb::env::SplitSpec> specs;
  for (const std::string& value : values) {
    std::pair<std::string, std::string> parts = absl::StrSplit(value, absl::MaxSplits('=', 1));
    if (parts.first.empty() || parts.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--split must be NAME=PATH, got '", value, "'"));
    }
    specs.push_back(hb::env::SplitSpec{parts.first, parts.second});
  }
  if (specs.empty()) return absl::InvalidArgumentError("give at least one --split NAME=PATH");
  return specs;
}

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

int Fail(const absl::Status& status) {
  HB_LOG_ERROR("hb-env: {}", status.ToString());
  return status.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  const std::vector<std::string> split_values = SplitFlagValues(argc, argv);
  hb::ParseFlags(argc, argv, kUsage);
  hb::InitLogging(absl::GetFlag(FLAGS_log_level).c_str());

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::vector<hb::env::SplitSpec>> specs = SplitSpecs(split_values);
  if (!specs.ok()) return Fail(specs.status());
  absl::StatusOr<hb::GraderServerOptions> grader_options = hb::GraderServerOptionsFromFlags();
  if (!grader_options.ok()) return Fail(grader_options.status());
  auto registry = std::make_shared<prometheus::Registry>();
  grader_options->registry = registry;

  absl::StatusOr<std::vector<hb::env::Split>> splits = hb::env::LoadSplits(*specs);
  if (!splits.ok()) return Fail(splits.status());

  // The grader: in-process, or replicas over gRPC (then a curl loop only for pacing timers).
  std::unique_ptr<hb::EmbeddedGrader> embedded;
  std::unique_ptr<hb::GrpcGraderClient> remote;
  std::unique_ptr<hb::CurlMultiHttpClient> timers;
  hb::GraderClient* client = nullptr;
  hb::Scheduler* scheduler = nullptr;
  std::string template_sha256;
  const std::string grader = absl::GetFlag(FLAGS_grader);
  if (grader == "embedded") {
    absl::StatusOr<std::unique_ptr<hb::EmbeddedGrader>> started =
        hb::EmbeddedGrader::Start(*grader_options);
    if (!started.ok()) return Fail(started.status());
    embedded = *std::move(started);
    client = &embedded->client();
    scheduler = &embedded->scheduler();
    template_sha256 = embedded->grader().grader_template().sha256();
  } else {
    absl::StatusOr<hb::GraderTemplate> tmpl = hb::GraderTemplate::Load(
        grader_options->template_path, grader_options->require_reference_template);
    if (!tmpl.ok()) return Fail(tmpl.status());
    template_sha256 = tmpl->sha256();
    absl::StatusOr<std::unique_ptr<hb::GrpcGraderClient>> created =
        hb::GrpcGraderClient::Create(grader);
    if (!created.ok()) return Fail(created.status());
    remote = *std::move(created);
    client = remote.get();
    absl::StatusOr<std::unique_ptr<hb::CurlMultiHttpClient>> loop =
        hb::CurlMultiHttpClient::Create(hb::CurlHttpClientOptions{});
    if (!loop.ok()) return Fail(loop.status());
    timers = *std::move(loop);
    scheduler = timers.get();
  }

  hb::env::HealthBenchEnvironmentOptions env_options;
  env_options.max_reply_bytes = static_cast<size_t>(absl::GetFlag(FLAGS_max_reply_bytes));
  env_options.max_pending = absl::GetFlag(FLAGS_max_pending);
  env_options.max_upstream_in_flight = grader_options->llm.max_upstream_in_flight;
  env_options.cache_entries = static_cast<size_t>(absl::GetFlag(FLAGS_cache_entries));
  const hb::GraderSettings& settings = grader_options->settings;
  env_options.grader_fingerprint =
      hb::env::GraderFingerprint(settings.model, settings.temperature, settings.max_tokens,
                                 settings.system_message, template_sha256);
  std::unique_ptr<hb::env::SqliteResultStore> cache_store;
  if (const std::string cache_db = absl::GetFlag(FLAGS_cache_db); !cache_db.empty()) {
    absl::StatusOr<std::unique_ptr<hb::env::SqliteResultStore>> opened =
        hb::env::SqliteResultStore::Open(cache_db);
    if (!opened.ok()) return Fail(opened.status());
    cache_store = *std::move(opened);
    env_options.cache_store = cache_store.get();
  }
  hb::env::EnvMetrics env_metrics(*registry);
  hb::env::HealthBenchEnvironment env(*std::move(splits), *client, hb::Clock::Real(), *scheduler,
                                      env_options, &env_metrics);
  if (absl::Status loaded = env.LoadCache(); !loaded.ok()) return Fail(loaded);

  std::unique_ptr<prometheus::Exposer> exposer;
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  if (!metrics_listen.empty()) {
    try {  // civetweb reports bind failures by throwing
      exposer = std::make_unique<prometheus::Exposer>(metrics_listen);
    } catch (const std::exception& e) {
      return Fail(absl::UnavailableError(
          absl::StrCat("cannot serve metrics on ", metrics_listen, ": ", e.what())));
    }
    exposer->RegisterCollectable(registry);
  }

  const std::string listen = absl::GetFlag(FLAGS_listen);
  absl::StatusOr<std::unique_ptr<hb::env::EnvGrpcServer>> server =
      hb::env::EnvGrpcServer::Start(env, hb::env::EnvServerOptions{listen});
  if (!server.ok()) return Fail(server.status());
  std::printf("grpc listening on %s:%d\n", HostOf(listen).c_str(), (*server)->port());
  const std::string http_listen = absl::GetFlag(FLAGS_http_listen);
  hb::env::OrsServerOptions ors_options;
  ors_options.listen = http_listen;
  absl::StatusOr<std::unique_ptr<hb::env::OrsHttpServer>> http =
      hb::env::OrsHttpServer::Start(env, hb::Clock::Real(), ors_options);
  if (!http.ok()) return Fail(http.status());
  std::printf("http listening on %s:%d\n", HostOf(http_listen).c_str(), (*http)->port());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  HB_LOG_INFO("hb-env: signal {} received", signal_number);
  (*http)->Shutdown();
  (*server)->Shutdown(absl::GetFlag(FLAGS_drain_timeout));
  server->reset();
  return 0;
}
