#include "orchestrator/commands/watch_command.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/exit_codes.h"
#include "common/base/file.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/healthbench/prompts.h"
#include "grader/grader_identity.h"
#include "grader/grader_info.h"
#include "grader_client/grpc_grader_client.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/orchestrator_metrics.h"
#include "orchestrator/run/output_lock.h"
#include "orchestrator/watch/checkpoint_watcher.h"
#include "orchestrator/watch/folder_events.h"

namespace hb {
namespace {

constexpr char kPrefix[] = "hb-orchestrator watch: ";

std::string OneLine(absl::string_view text) { return absl::StrReplaceAll(text, {{"\n", " "}}); }

// The key's dataset and grader parts: the dataset file's sha256 (as run's journal records it)
// and the fingerprint of the grader settings and template this watcher grades with.
absl::Status IdentityOfGrading(const RunOptions& run, std::string& dataset_sha256,
                               std::string& grader_fingerprint) {
  absl::StatusOr<std::string> dataset = Sha256OfFile(run.dataset);
  if (!dataset.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--dataset: ", dataset.status().message()));
  }
  dataset_sha256 = *std::move(dataset);
  absl::StatusOr<GraderTemplate> grader_template = GraderTemplate::Load(
      run.grader_options.template_path, run.grader_options.require_reference_template);
  if (!grader_template.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grader-template: ", grader_template.status().message()));
  }
  if (run.grader == kEmbeddedGrader) {
    grader_fingerprint =
        IdentityFingerprint(GraderIdentity{run.grader_options.settings, grader_template->sha256()});
    return absl::OkStatus();
  }
  // A gRPC --grader grades with what its replicas say (GetInfo), whatever this command line's
  // --llm-* flags are: the key names the grading that happened.
  absl::StatusOr<std::vector<ReplicaInfo>> replicas =
      AgreedReplicaInfos(run.grader, run.grader_security, run.grader_ready_timeout);
  if (!replicas.ok()) {
    return absl::Status(replicas.status().code(),
                        absl::StrCat("--grader ", run.grader, ": ", replicas.status().message()));
  }
  grader_fingerprint = IdentityFingerprint(IdentityOf(replicas->front().info));
  return absl::OkStatus();
}

// One version through run's grading core, as one checkpoint in its own run folder.
GradeOutcome GradeThroughRun(const WatchOptions& options, const CheckpointVersion& version,
                             StopSwitch& stop) {
  RunOptions run = options.run;
  run.out = version.run_dir;
  run.checkpoints = {CheckpointSpec{version.name, version.responses_path}};
  run.policies.clear();
  run.shard_index = 0;
  run.shard_count = 1;
  std::vector<CheckpointResult> results;
  absl::StatusOr<int> code = RunGrading(run, stop, &results);
  GradeOutcome outcome;
  if (!code.ok()) {
    outcome.exit_code = ExitCodeFor(code.status());
    outcome.error = OneLine(code.status().message());
    return outcome;
  }
  outcome.exit_code = *code;
  if (!results.empty()) {
    outcome.score = results.front().score;
    outcome.cost_usd = results.front().usage.CostUsd(run.prices, run.batch_price_factor);
  }
  return outcome;
}

// GradeThroughRun, counted in the checkpoint metrics.
GradeOutcome GradeVersion(const WatchOptions& options, const CheckpointVersion& version,
                          StopSwitch& stop) {
  GradeOutcome outcome = GradeThroughRun(options, version, stop);
  if (options.metrics != nullptr && outcome.exit_code != kExitInterrupted) {
    options.metrics->CheckpointFinished(outcome.exit_code == kExitOk ? "graded" : "failed");
  }
  return outcome;
}

// OUT/comparison.{json,html} over `names` (OUT/<name>), by `compare`'s code; `session` keeps
// what earlier calls read, so each call reads only the checkpoints new or changed since.
void WriteWatchComparison(CompareSession& session, const std::string& out,
                          const std::vector<std::string>& names) {
  if (names.size() < 2) return;
  CompareOptions compare;
  compare.out = out;
  for (const std::string& name : names) compare.dirs.push_back(absl::StrCat(out, "/", name));
  absl::StatusOr<std::string> written = session.Run(compare);
  if (!written.ok()) {
    std::fprintf(stderr, "%scomparison not written: %s\n", kPrefix,
                 OneLine(written.status().message()).c_str());
    return;
  }
  std::fprintf(stderr, "%scomparison over %zu checkpoints -> %s/comparison.html\n", kPrefix,
               names.size(), out.c_str());
}

// Passes until a stop (or once); the exit code.
absl::StatusOr<int> WatchLoop(const WatchOptions& options, CheckpointWatcher& watcher,
                              FolderEvents& events, const std::atomic<bool>& stopping) {
  int once_code = kExitOk;
  while (true) {
    events.Watch(options.checkpoints_dir);
    HB_ASSIGN_OR_RETURN(const PassSummary pass, watcher.Pass(stopping));
    once_code = pass.exit_code;
    if (options.once)
      return stopping.load() && pass.exit_code == kExitOk ? kExitInterrupted : once_code;
    if (stopping.load()) return kExitOk;
    for (const std::string& folder : watcher.folders()) events.Watch(folder);
    events.Wait(watcher.NextPassAt());
    if (stopping.load()) return kExitOk;
  }
}

absl::StatusOr<int> Watch(const WatchOptions& options, StopSwitch& stop,
                          const std::atomic<bool>& stopping, FolderEvents& events) {
  HB_RETURN_IF_ERROR(MakeOutputDirs("--out", options.run.out, options.run.out));
  HB_ASSIGN_OR_RETURN(const std::unique_ptr<OutputLock> lock, OutputLock::Acquire(options.run.out));
  CheckpointWatcherOptions watcher_options;
  watcher_options.checkpoints_dir = options.checkpoints_dir;
  watcher_options.out = options.run.out;
  watcher_options.ready_marker = options.ready_marker;
  watcher_options.poll_interval = options.poll_interval;
  HB_RETURN_IF_ERROR(IdentityOfGrading(options.run, watcher_options.dataset_sha256,
                                       watcher_options.grader_fingerprint));
  watcher_options.grade = [&options, &stop](const CheckpointVersion& version) {
    return GradeVersion(options, version, stop);
  };
  if (options.metrics != nullptr) {
    OrchestratorMetrics* metrics = options.metrics;
    watcher_options.on_pending = [metrics](int64_t pending) {
      metrics->SetCheckpointsPending(pending);
    };
  }
  const std::string out = options.run.out;
  CompareSession comparison;
  watcher_options.on_report = [out, &comparison](const std::vector<std::string>& names) {
    WriteWatchComparison(comparison, out, names);
  };
  HB_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWatcher> watcher,
                      CheckpointWatcher::Open(std::move(watcher_options)));
  std::fprintf(stderr, "%swatching %s for <name>/%s (inotify %s, rescan every %s); writing %s\n",
               kPrefix, options.checkpoints_dir.c_str(), options.ready_marker.c_str(),
               events.inotify() ? "on" : "off", absl::FormatDuration(options.poll_interval).c_str(),
               out.c_str());
  return WatchLoop(options, *watcher, events, stopping);
}

}  // namespace

absl::Status ValidateWatchOptions(const WatchOptions& options) {
  if (options.checkpoints_dir.empty()) {
    return absl::InvalidArgumentError("--checkpoints-dir is required");
  }
  if (options.ready_marker.empty() || absl::StrContains(options.ready_marker, "/")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ready-marker must be a file name (no '/'), got '", options.ready_marker, "'"));
  }
  if (options.poll_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--poll-interval must be positive, e.g. 30s");
  }
  // run's checks of the grading flags, with a stand-in for the checkpoints watch finds itself.
  RunOptions run = options.run;
  run.checkpoints = {CheckpointSpec{"watch", options.checkpoints_dir}};
  return ValidateRunOptions(run);
}

int RunWatch(const WatchOptions& options) {
  if (options.run.simulated_verdicts) {
    // Declared, not detected: the endpoint is named by each graded checkpoint's own banner.
    std::fprintf(stderr, "%sSIMULATED VERDICTS: declared by --simulated-verdicts\n", kPrefix);
  }
  absl::StatusOr<std::unique_ptr<FolderEvents>> events = FolderEvents::Create();
  if (!events.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, OneLine(events.status().message()).c_str());
    return kExitInternal;
  }
  // Before any thread starts, as run: a SIGTERM must reach the watcher thread.
  StopSwitch stop;
  std::atomic<bool> stopping{false};
  FolderEvents* wake = events->get();
  StopSignals signals([&](int signal, int count) {
    if (count > 1) {
      HB_LOG_WARN("second signal: exiting at once (committed rows are kept in the journal)");
      std::_Exit(kExitInterrupted);
    }
    HB_LOG_WARN("{} received: no new checkpoint; the one in flight drains its rows ({})",
                SignalName(signal), absl::FormatDuration(options.run.drain_timeout));
    stopping.store(true);
    stop.Request();
    wake->Wake();
  });
  absl::StatusOr<int> code = Watch(options, stop, stopping, **events);
  if (!code.ok()) {
    std::fprintf(stderr, "%s%s\n", kPrefix, OneLine(code.status().message()).c_str());
    return ExitCodeFor(code.status());
  }
  return *code;
}

}  // namespace hb
