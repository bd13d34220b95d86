// hb-env: HealthBench as an environment. See environment/healthbench_environment.h.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/grader_flags.h"
#include "cli/http_limit_flags.h"
#include "cli/security_flags.h"
#include "cli/server_flags.h"
#include "common/base/host_port.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "environment/env_metrics.h"
#include "environment/grpc/env_server.h"
#include "environment/healthbench_environment.h"
#include "environment/http/ors_http_server.h"
#include "environment/sqlite_result_store.h"
#include "grader/grader_identity.h"
#include "grader/grader_info.h"
#include "grader_client/grader_connection.h"
#include "llm/endpoint_preflight.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace {

constexpr char kDescription[] = R"(hb-env: HealthBench as an environment.

Loads HealthBench JSONL files as named splits (--split NAME=PATH, repeatable) and serves them
over gRPC (healthbench.env.v1.Environment, plus grpc.health.v1 and reflection) and HTTP (the
Open Reward Standard API): list tasks, read a task's prompt, submit a reply and get its reward
(the reference's per-task score) with per-item verdicts. The HTTP port also serves the RL
trainers' reward routes: OpenRLHF POST /get_reward, slime POST /reward, NeMo-Gym POST
/seed_session, /verify, /aggregate_metrics. Grading uses hb-grader's code,
in-process (--grader embedded) or on hb-grader replicas, each asked at start what it grades
with (GetInfo: replicas that disagree are refused). Results are cached by (task, reply, grader
settings); identical submissions in flight share one grading.

Prints "grpc listening on HOST:PORT" and "http listening on HOST:PORT" when ready.
Both transports check bearer tokens when --auth-token-file is given (health stays open); a
non-loopback listen address needs tokens, mTLS or --allow-insecure.
An embedded grader whose upstream cannot be called (no API key for a remote https endpoint, a
host that does not resolve) is refused at start with exit status 2.
SIGTERM/SIGINT: report NOT_SERVING, drain for --drain-timeout, exit 0.

Usage: hb-env --split test=data/oss_eval.jsonl [--grader embedded] [--listen 127.0.0.1:50061] ...)";

constexpr char kFooter[] =
    "Exit status: 0 after a signal and a drain, 2 on bad usage, an embedded grader's upstream "
    "without API key or address, or --grader replicas that cannot answer or disagree on their "
    "settings, or a --listen/--http-listen address in use, 1 when the service cannot start.";

// The ORS listener's request limits: BoundedEvhttp's, with OrsServerOptions' body limit.
hb::HttpServerLimits OrsHttpLimits() {
  const hb::env::OrsServerOptions defaults;
  hb::HttpServerLimits limits = defaults.http_limits;
  limits.max_body_bytes = defaults.max_body_bytes;
  return limits;
}

struct Flags {
  hb::cli::GraderFlags grader_flags;
  hb::ClientSecurityOptions grader_security;
  std::vector<std::string> splits;
  std::string grader = hb::kEmbeddedGrader;
  std::string listen = "127.0.0.1:50061";
  std::string http_listen = "127.0.0.1:8080";
  hb::cli::HttpLimitFlags http_limits = hb::cli::HttpLimitFlagsFrom(OrsHttpLimits());
  hb::cli::ServerFlags server;
  int64_t cache_entries = 100000;
  std::string cache_db;
  int64_t max_pending = 4096;
  int64_t max_reply_bytes = 1 << 20;
  hb::cli::LengthAdjustmentFlags length_adjustment;
  std::string reward = "raw";
  std::vector<std::string> strip_suffixes;
  bool professional = false;
};

void AddFlags(hb::cli::Command& command, Flags* flags) {
  command.Group("environment");
  command.Repeated("split", &flags->splits, "NAME=PATH",
                   "a HealthBench JSONL file served as split NAME; repeat the flag for more "
                   "splits (at least one); splits may share prompt_ids (main, hard and "
                   "consensus): a task is (split, prompt_id)");
  command.Flag("grader", &flags->grader, "TARGET",
               "'embedded' (grade in-process, configured by the --llm-* flags) or a gRPC target "
               "of hb-grader replicas (dns:///host:port, ipv4:a:p,b:p; round_robin)");
  command.Flag("cache-entries", &flags->cache_entries, "N",
               "graded results kept in memory (LRU) to answer resubmissions; 0 turns the cache "
               "off");
  command.Flag("cache-db", &flags->cache_db, "PATH",
               "SQLite file where cached results persist (reloaded at start); empty keeps them "
               "in memory only");
  command.Flag("max-pending", &flags->max_pending, "N",
               "distinct submissions graded at once; beyond it Submit is RESOURCE_EXHAUSTED");
  command.Flag("max-reply-bytes", &flags->max_reply_bytes, "N", "largest reply accepted, in bytes");
  hb::cli::AddLengthAdjustmentFlags(command, &flags->length_adjustment);
  command.Flag("reward", &flags->reward, "raw|length_adjusted",
               "the reward: the raw score, or overall_score_length_adjusted (needs the length "
               "adjustment); every reply carries both (the adjusted one among the tag scores)");
  hb::cli::AddProfessionalFlag(command, &flags->professional);
  command.Repeated("strip-suffix", &flags->strip_suffixes, "TOKEN",
                   "end-of-turn token removed from the end of every reply the trainer routes "
                   "(/get_reward, /reward, /verify) grade, repeatedly; repeat the flag for more. "
                   "Default: <|im_end|> <|endoftext|> </s> <|eot_id|> <|end|>; giving the flag "
                   "replaces the default, and --strip-suffix= (empty) alone strips nothing");
  command.Group("server");
  hb::cli::AddListenFlag(command, &flags->listen,
                         "gRPC listen address (port 0 picks one; stdout's first line is 'grpc "
                         "listening on HOST:PORT')");
  command.Flag("http-listen", &flags->http_listen, "HOST:PORT",
               "Open Reward Standard HTTP listen address (port 0 picks one; stdout's second "
               "line is 'http listening on HOST:PORT')");
  hb::cli::AddHttpLimitFlags(command, &flags->http_limits);
  flags->server.metrics_listen = "127.0.0.1:9465";
  hb::cli::AddServerFlags(command, &flags->server);
  hb::cli::AddGraderClientSecurityFlags(command, &flags->grader_security);
  // Rewards for a trainer are interactive: a batch backfill on the same quota yields to them.
  flags->grader_flags.stack.quota.priority = hb::QuotaPriority::kInteractive;
  hb::cli::AddGraderFlags(command, &flags->grader_flags);
}

struct ScoringOptions {
  std::optional<hb::LengthAdjustment> length_adjustment;
  bool reward_length_adjusted = false;
};

// --length-adjustment-*, --reward and --professional (which also sets the grader flags and
// needs every split in the Professional format).
absl::StatusOr<ScoringOptions> ResolveScoring(hb::cli::Command& command, Flags& flags,
                                              const std::vector<hb::env::SplitSpec>& specs) {
  ScoringOptions scoring;
  if (flags.professional) {
    HB_RETURN_IF_ERROR(hb::cli::ApplyProfessionalGrader(command, &flags.grader_flags.stack.settings,
                                                        &flags.grader_flags.api));
    for (const hb::env::SplitSpec& spec : specs) {
      HB_RETURN_IF_ERROR(hb::cli::CheckProfessionalDataset(spec.path));
    }
  }
  HB_ASSIGN_OR_RETURN(
      scoring.length_adjustment,
      flags.professional
          ? hb::cli::ResolveProfessionalLengthAdjustment(command, flags.length_adjustment)
          : hb::cli::ResolveLengthAdjustmentFlags(command, flags.length_adjustment));
  if (flags.reward != "raw" && flags.reward != "length_adjusted") {
    return absl::InvalidArgumentError(
        absl::StrCat("--reward must be raw or length_adjusted, got '", flags.reward, "'"));
  }
  scoring.reward_length_adjusted = flags.reward == "length_adjusted";
  if (scoring.reward_length_adjusted && !scoring.length_adjustment.has_value()) {
    return absl::InvalidArgumentError(
        "--reward length_adjusted needs --length-adjustment-center and "
        "--length-adjustment-penalty-per-500-chars (or --professional)");
  }
  return scoring;
}

// --strip-suffix: the default list unless given; empty values are dropped (so that
// `--strip-suffix=` alone gives an empty list).
hb::env::TrainerProtocolOptions TrainerOptions(const hb::cli::Command& command,
                                               const Flags& flags) {
  hb::env::TrainerProtocolOptions options;
  if (!command.Given("strip-suffix")) return options;
  options.strip_suffixes.clear();
  for (const std::string& suffix : flags.strip_suffixes) {
    if (!suffix.empty()) options.strip_suffixes.push_back(suffix);
  }
  return options;
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

// The HTTP limit flags, with a body limit that lets a reply of --max-reply-bytes be posted.
absl::StatusOr<hb::HttpServerLimits> HttpLimits(const Flags& flags) {
  HB_ASSIGN_OR_RETURN(hb::HttpServerLimits limits,
                      hb::cli::ResolveHttpLimitFlags(flags.http_limits, OrsHttpLimits()));
  if (static_cast<int64_t>(limits.max_body_bytes) < flags.max_reply_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-body-bytes (", limits.max_body_bytes, ") is below --max-reply-bytes (",
        flags.max_reply_bytes,
        "): a reply of that size could not be posted over HTTP; raise --max-body-bytes"));
  }
  return limits;
}

int Fail(const absl::Status& status) {
  HB_LOG_ERROR("hb-env: {}", status.ToString());
  return hb::ExitCodeFor(status);
}

// A server that cannot listen on `flag`'s `address`: named, and a bound address (kUnavailable:
// in use, or not this host's) is the caller's to fix like any bad flag value (exit 2).
int ListenFailed(const char* flag, const std::string& address, const absl::Status& status) {
  HB_LOG_ERROR("hb-env: {}={}: {}{}", flag, address, status.ToString(),
               status.code() == absl::StatusCode::kUnavailable
                   ? absl::StrCat(" (is another process listening there? give ", flag,
                                  " a free address; port 0 picks one)")
                   : "");
  return status.code() == absl::StatusCode::kUnavailable ? hb::kExitUsage : hb::ExitCodeFor(status);
}

// Everything the command line resolves to, checked before any thread starts (exit 2 naming
// the flag otherwise).
struct Resolved {
  std::vector<hb::env::SplitSpec> specs;
  hb::HttpServerLimits http_limits;
  ScoringOptions scoring;
  hb::GraderStackOptions grader_options;
  hb::ServerSecurityOptions security;
  hb::GraderTarget target;
};

absl::StatusOr<Resolved> ResolveFlags(hb::cli::Command& command, Flags& flags) {
  Resolved resolved;
  HB_ASSIGN_OR_RETURN(resolved.specs, SplitSpecs(flags.splits));
  HB_RETURN_IF_ERROR(hb::cli::CheckServerFlags(flags.server));
  HB_ASSIGN_OR_RETURN(resolved.http_limits, HttpLimits(flags));
  HB_ASSIGN_OR_RETURN(resolved.scoring, ResolveScoring(command, flags, resolved.specs));
  HB_ASSIGN_OR_RETURN(resolved.grader_options, hb::cli::ResolveGraderFlags(flags.grader_flags));
  HB_RETURN_IF_ERROR(hb::cli::CheckUpstreamFlagsAreEmbedded(flags.grader, resolved.grader_options));
  HB_ASSIGN_OR_RETURN(resolved.security, hb::cli::ResolveServerSecurity(flags.server.security));
  HB_ASSIGN_OR_RETURN(resolved.target, hb::ParseGraderTarget(flags.grader));
  return resolved;
}

// An embedded grader whose upstream cannot be called (no key for a remote https endpoint, a
// host that does not resolve) is refused within seconds, with the fix, before the splits are
// read. hb-grader replicas check their own upstream. Runs a resolver thread: after StopSignals.
absl::Status PreflightEmbeddedUpstream(const Resolved& resolved) {
  if (!resolved.target.embedded()) return absl::OkStatus();
  const hb::GraderStackOptions& options = resolved.grader_options;
  return hb::PreflightEndpoint(hb::LlmEndpoint(options.llm, options.settings.headers));
}

// Replicas must grade with what this command line asked for (--professional, --llm-model, ...):
// refused before any task is served (exit 2 naming the field).
absl::Status CheckRemoteGrader(const hb::cli::Command& command, const Flags& flags,
                               const Resolved& resolved,
                               const healthbench::grader::v1::GraderInfo& grader_info) {
  if (resolved.target.embedded()) return absl::OkStatus();
  return hb::CheckGraderIsExpected(
      hb::cli::ExpectedRemoteGrader(command, flags.professional, flags.grader_flags.api,
                                    resolved.grader_options.settings),
      grader_info, flags.grader);
}

hb::env::HealthBenchEnvironmentOptions EnvOptions(
    const Flags& flags, const Resolved& resolved,
    const healthbench::grader::v1::GraderInfo& grader_info) {
  hb::env::HealthBenchEnvironmentOptions options;
  options.max_reply_bytes = static_cast<size_t>(flags.max_reply_bytes);
  options.max_pending = flags.max_pending;
  options.max_upstream_in_flight = resolved.grader_options.llm.max_upstream_in_flight;
  options.cache_entries = static_cast<size_t>(flags.cache_entries);
  options.length_adjustment = resolved.scoring.length_adjustment;
  options.reward_length_adjusted = resolved.scoring.reward_length_adjusted;
  // Cached results are keyed by what the graders grade with, not by this process's flags.
  options.grader_fingerprint =
      hb::env::ScoringFingerprint(hb::IdentityFingerprint(hb::IdentityOf(grader_info)), options);
  return options;
}

// Serves `env` over gRPC (--listen) and HTTP (--http-listen), printing each bound address,
// until SIGTERM or SIGINT; then drains both. The process's exit code.
int Serve(hb::env::HealthBenchEnvironment& env, const hb::cli::Command& command, const Flags& flags,
          const Resolved& resolved, hb::env::EnvMetrics* metrics, hb::StopSignals& signals) {
  const std::string& listen = flags.listen;
  hb::env::EnvServerOptions server_options;
  server_options.listen_address = listen;
  server_options.security = resolved.security;
  server_options.reflection = flags.server.reflection;
  server_options.max_receive_message_bytes =
      hb::env::ReceiveLimitFor(static_cast<size_t>(flags.max_reply_bytes));
  server_options.service.max_concurrent_rpcs = flags.server.max_concurrent_rpcs;
  server_options.service.default_deadline = flags.server.default_deadline;
  server_options.service.max_field_bytes = resolved.grader_options.limits.max_field_bytes;
  absl::StatusOr<std::unique_ptr<hb::env::EnvGrpcServer>> server =
      hb::env::EnvGrpcServer::Start(env, server_options);
  if (!server.ok()) return ListenFailed("--listen", listen, server.status());
  std::printf("grpc listening on %s:%d\n", std::string(hb::HostPartOf(listen)).c_str(),
              (*server)->port());
  const std::string& http_listen = flags.http_listen;
  hb::env::OrsServerOptions ors_options;
  ors_options.listen = http_listen;
  ors_options.tokens = resolved.security.tokens;
  ors_options.allow_insecure = resolved.security.allow_insecure;
  ors_options.trainer = TrainerOptions(command, flags);
  ors_options.metrics = metrics;
  ors_options.http_limits = resolved.http_limits;
  ors_options.max_body_bytes = resolved.http_limits.max_body_bytes;
  absl::StatusOr<std::unique_ptr<hb::env::OrsHttpServer>> http =
      hb::env::OrsHttpServer::Start(env, hb::Clock::Real(), ors_options);
  if (!http.ok()) return ListenFailed("--http-listen", http_listen, http.status());
  std::printf("http listening on %s:%d\n", std::string(hb::HostPartOf(http_listen)).c_str(),
              (*http)->port());
  std::fflush(stdout);

  const int signal_number = signals.Wait();
  HB_LOG_INFO("hb-env: {} received", hb::SignalName(signal_number));
  (*http)->Shutdown();
  (*server)->Shutdown(flags.server.drain_timeout);
  server->reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  Flags flags;
  hb::cli::Program program("hb-env", kDescription, kFooter);
  AddFlags(program.root(), &flags);
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv)) return *exit_code;
  hb::InitLogging(flags.server.log_level.c_str());
  absl::StatusOr<Resolved> resolved = ResolveFlags(program.root(), flags);
  if (!resolved.ok()) return program.UsageError("", resolved.status());

  // Before any thread starts: the signals must reach the watcher only.
  hb::StopSignals signals;
  auto registry = std::make_shared<prometheus::Registry>();
  resolved->grader_options.registry = registry;
  if (absl::Status upstream = PreflightEmbeddedUpstream(*resolved); !upstream.ok()) {
    std::fprintf(stderr, "hb-env: %s\n", hb::cli::OneLine(upstream).c_str());
    return hb::ExitCodeFor(upstream);
  }
  absl::StatusOr<std::vector<hb::env::Split>> splits = hb::env::LoadSplits(resolved->specs);
  if (!splits.ok()) return Fail(splits.status());

  // The grader: in-process, or replicas over gRPC (checked to agree on what they grade with).
  // Replicas that cannot be reached (kInvalidArgument) or disagree (kFailedPrecondition) exit 2
  // through ExitCodeFor, like every other bad input.
  hb::GraderConnectOptions connect;
  connect.target = resolved->target;
  connect.stack = resolved->grader_options;
  connect.security = flags.grader_security;
  absl::StatusOr<std::unique_ptr<hb::GraderConnection>> grader = hb::ConnectGrader(connect);
  if (!grader.ok()) return Fail(grader.status());
  const healthbench::grader::v1::GraderInfo& grader_info = (*grader)->info;
  if (absl::Status expected = CheckRemoteGrader(program.root(), flags, *resolved, grader_info);
      !expected.ok()) {
    std::fprintf(stderr, "hb-env: %s\n", hb::cli::OneLine(expected).c_str());
    return hb::ExitCodeFor(expected);
  }

  hb::env::HealthBenchEnvironmentOptions env_options = EnvOptions(flags, *resolved, grader_info);
  std::unique_ptr<hb::env::SqliteResultStore> cache_store;
  if (!flags.cache_db.empty()) {
    absl::StatusOr<std::unique_ptr<hb::env::SqliteResultStore>> opened =
        hb::env::SqliteResultStore::Open(flags.cache_db);
    if (!opened.ok()) return Fail(opened.status());
    cache_store = *std::move(opened);
    env_options.cache_store = cache_store.get();
  }
  hb::env::EnvMetrics env_metrics(*registry);
  hb::env::HealthBenchEnvironment env(*std::move(splits), (*grader)->grader_client(),
                                      hb::Clock::Real(), (*grader)->scheduler(), env_options,
                                      &env_metrics);
  if (absl::Status loaded = env.LoadCache(); !loaded.ok()) return Fail(loaded);
  absl::StatusOr<std::unique_ptr<prometheus::Exposer>> exposer =
      hb::cli::ServeMetrics(flags.server.metrics_listen, registry, "hb-env");
  if (!exposer.ok()) return Fail(exposer.status());
  return Serve(env, program.root(), flags, *resolved, &env_metrics, signals);
}
