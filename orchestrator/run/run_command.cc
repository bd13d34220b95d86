#include "orchestrator/run/run_command.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "grader_service/grader_flags.h"
#include "grader_service/grader_server.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/run/dispatcher.h"
#include "orchestrator/run/grpc_grader_client.h"
#include "orchestrator/run/sqlite_verdict_store.h"

// Run's own flags. They are parsed by ParseRunArgs (hb-orchestrator hands `run` its raw
// arguments); --helpfull lists them. --dataset, --responses, --out, --examples, --seed and the
// --price-* flags are shared with the other subcommands, whose main.cc defines them, so `run`
// parses those itself (see kSharedFlags below) instead of defining them twice.
ABSL_FLAG(std::string, grader, "embedded",
          "run: 'embedded' (start hb-grader in-process on 127.0.0.1, configured by the --llm-* "
          "flags) or a gRPC target such as dns:///grader-headless:50051 or "
          "ipv4:127.0.0.1:50051,127.0.0.1:50052 (round_robin over every address)");
ABSL_FLAG(int, max_in_flight, 512, "run: grader RPCs outstanding at most");
ABSL_FLAG(bool, adaptive_concurrency, true,
          "run: adapt the in-flight window within [1, --max-in-flight] (AIMD) and pace dispatch "
          "from the upstream rate-limit headers the graders relay; false keeps --max-in-flight "
          "RPCs outstanding");
ABSL_FLAG(int, row_attempts, 3,
          "run: attempts per row (first included) for retryable RPC errors (UNAVAILABLE, "
          "RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN)");
ABSL_FLAG(absl::Duration, row_timeout, absl::Seconds(300), "run: deadline of one grader RPC");
ABSL_FLAG(int, shard_index, 0,
          "run: this shard's index in [0, --shard-count); default $JOB_COMPLETION_INDEX when set");
ABSL_FLAG(int, shard_count, 1,
          "run: number of shards; shard i grades the selected tasks at positions p with "
          "p % count == i, and writes to OUT/shard-<i> when count > 1");
ABSL_FLAG(bool, force_new, false,
          "run: start a new journal; an existing OUT/journal.sqlite is moved aside to "
          "journal.sqlite.old-<time> (never deleted)");
ABSL_FLAG(std::string, progress, "auto",
          "run: auto (tty when stderr is a terminal, else log), tty (live line), log (a line "
          "every --progress-interval) or off");
ABSL_FLAG(absl::Duration, progress_interval, absl::Seconds(5),
          "run: time between progress reports");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(20),
          "run: on SIGTERM/SIGINT, how long in-flight rows may finish before they are cancelled");
ABSL_FLAG(bool, simulated_verdicts, false,
          "run: the grader endpoint is the bundled simulator (hb-llm-sim): reports are marked "
          "SIMULATED and a banner is printed");
ABSL_FLAG(bool, skip_invalid, false,
          "run: skip invalid dataset lines (counted and reported) instead of failing");

namespace hb {
namespace {

// Flags main.cc defines for every subcommand; `run` reads their values itself.
const std::set<std::string>& SharedFlags() {
  static const auto* names = new std::set<std::string>{"dataset",
                                                       "responses",
                                                       "out",
                                                       "examples",
                                                       "seed",
                                                       "prompt_cache_key",
                                                       "price_input_per_mtok",
                                                       "price_cached_input_per_mtok",
                                                       "price_output_per_mtok"};
  return *names;
}

// Run's own flags (defined above).
const std::set<std::string>& OwnFlags() {
  static const auto* names = new std::set<std::string>{
      "grader",      "max_in_flight",     "adaptive_concurrency", "row_attempts",
      "row_timeout", "shard_index",       "shard_count",          "force_new",
      "progress",    "progress_interval", "drain_timeout",        "simulated_verdicts",
      "skip_invalid"};
  return *names;
}

// hb::grader_flags' flags: the embedded grader's configuration and the grader settings the
// journal and reports record.
const std::set<std::string>& GraderFlags() {
  static const auto* names = new std::set<std::string>{
      "llm_base_url",           "llm_model",         "llm_temperature",
      "llm_max_tokens",         "llm_api_key_file",  "max_attempts",
      "backoff_base",           "backoff_cap",       "attempt_timeout",
      "max_upstream_in_flight", "max_message_bytes", "max_conversation_messages",
      "max_rubric_items",       "grader_template",   "require_reference_template"};
  return *names;
}

const std::set<std::string>& BoolFlags() {
  static const auto* names =
      new std::set<std::string>{"force_new", "simulated_verdicts", "skip_invalid",
                                "require_reference_template", "adaptive_concurrency"};
  return *names;
}

template <typename T>
absl::Status ParseValue(const std::string& name, const std::string& text, T* value) {
  std::string error;
  if (!absl::ParseFlag(text, value, &error)) {
    return absl::InvalidArgumentError(absl::StrCat("invalid value '", text, "' for --",
                                                   absl::StrReplaceAll(name, {{"_", "-"}}),
                                                   error.empty() ? "" : ": ", error));
  }
  return absl::OkStatus();
}

std::string Dashed(const std::string& name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }

// Copies `text` into the absl flag `name` (after resetting it to its default).
absl::Status SetAbslFlag(const std::string& name, const std::string* text) {
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr) {
    return absl::InternalError(absl::StrCat("flag --", Dashed(name), " is not linked in"));
  }
  std::string error;
  if (!flag->ParseFrom(flag->DefaultValue(), &error)) {
    return absl::InternalError(absl::StrCat("cannot reset --", Dashed(name), ": ", error));
  }
  if (text != nullptr && !flag->ParseFrom(*text, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid value '", *text, "' for --", Dashed(name), ": ", error));
  }
  return absl::OkStatus();
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Blocks SIGINT/SIGTERM in this thread (and every thread it starts) and waits for them on a
// watcher thread, which calls `on_signal(count)` for each one. Restores everything on
// destruction.
class SignalWatcher {
 public:
  explicit SignalWatcher(std::function<void(int signal, int count)> on_signal)
      : on_signal_(std::move(on_signal)) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
    thread_ = std::thread([this] {
      int count = 0;
      while (true) {
        int signal = 0;
        if (sigwait(&set_, &signal) != 0) continue;
        if (done_.load()) return;
        on_signal_(signal, ++count);
      }
    });
  }
  ~SignalWatcher() {
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes sigwait; ignored as done_ is set
    thread_.join();
    // Drop a signal that arrived after the run was over rather than dying from it now.
    sigset_t pending;
    sigpending(&pending);
    timespec zero{0, 0};
    while (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM)) {
      sigtimedwait(&set_, nullptr, &zero);
      sigpending(&pending);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }

 private:
  std::function<void(int, int)> on_signal_;
  sigset_t set_;
  sigset_t old_mask_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

struct LoadedCheckpoint {
  CheckpointSpec spec;
  ResponseSet responses;
};

// The tasks of `dataset` at `positions` (ascending, distinct), in that order. The examples are
// moved out of `dataset` (no copy of the largest data the run holds); its examples and index
// are cleared, its path, sha256 and skipped lines stay.
Dataset SubsetDataset(Dataset& dataset, const std::vector<size_t>& positions) {
  Dataset out;
  out.path = dataset.path;
  out.sha256 = dataset.sha256;
  out.skipped = dataset.skipped;
  out.examples.reserve(positions.size());
  for (size_t p : positions) {
    out.index[dataset.examples[p].prompt_id] = out.examples.size();
    out.examples.push_back(std::move(dataset.examples[p]));
  }
  std::vector<Example>().swap(dataset.examples);
  dataset.index.clear();
  return out;
}

void PrintSimulatedBanner() {
  std::fputs(
      "\n"
      "************************************************************************\n"
      "*  SIMULATED VERDICTS: the grader endpoint is hb-llm-sim, not a model. *\n"
      "*  Scores are a deterministic hash of the prompt, NOT a HealthBench    *\n"
      "*  result. Reports are marked SIMULATED.                               *\n"
      "************************************************************************\n\n",
      stderr);
}

// Turns a run-level failure into an exit code after printing it.
int Fail(int code, const absl::Status& status) {
  std::fprintf(stderr, "hb-orchestrator run: %s\n",
               absl::StrReplaceAll(status.message(), {{"\n", " "}}).c_str());
  return code;
}

// Exit code for errors while loading inputs: read errors and bad data are the caller's
// problem (2); anything else is ours (1).
int InputErrorCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return kRunExitUsage;
    default:
      return kRunExitInternal;
  }
}

}  // namespace

const char kRunUsage[] =
    R"(usage: hb-orchestrator run --dataset FILE --responses [NAME=]FILE[,...] --out DIR [flags]

Grades every rubric item of every task that has a response, for each checkpoint, through
hb-grader replicas; journals each verdict in DIR/journal.sqlite and writes DIR/<checkpoint>/
{tasks.jsonl, summary.json, verdicts.jsonl, failures.jsonl, report.html}, plus
DIR/comparison.{json,html} for two or more checkpoints. Running the same command again grades
only the rows that failed or are missing.

inputs and outputs:
  --dataset FILE                 HealthBench JSONL (plain or gzip)
  --responses [NAME=]FILE        responses JSONL {prompt_id, response, system_prompt?}; repeat
                                 the flag or give a comma list for several checkpoints. NAME
                                 defaults to the file name without .gz/.jsonl/.json; names must
                                 be unique and use only [A-Za-z0-9._-]
  --out DIR                      output folder (created); with --shard-count > 1 the run writes
                                 DIR/shard-<index>
  --examples N                   the reference's --examples N selection (-1 = every task)
  --seed N                       numpy seed of the bootstrap statistics (default 0)
  --skip-invalid                 skip invalid dataset lines instead of failing
  --force-new                    start a new journal; an existing one is moved aside to
                                 DIR/journal.sqlite.old-<time> (never deleted). Without it, a
                                 journal from another dataset/template/grader/responses is an
                                 error (exit 2)

grader:
  --grader embedded|TARGET       'embedded' (default) starts the grader in-process on
                                 127.0.0.1, configured by --grader-template and --llm-* (see
                                 hb-grader --help); else a gRPC target, e.g.
                                 dns:///grader-headless:50051 or
                                 ipv4:127.0.0.1:50051,127.0.0.1:50052 (round_robin)
  --grader-template, --require-reference-template, --llm-model, --llm-temperature,
  --llm-max-tokens, --llm-base-url, --llm-api-key-file, --max-attempts, --backoff-base,
  --backoff-cap, --attempt-timeout, --max-upstream-in-flight, --max-message-bytes,
  --max-conversation-messages, --max-rubric-items
                                 the grader's own flags (as hb-grader); the template sha256 and
                                 the model settings are recorded in the journal and reports
  --simulated-verdicts           the endpoint is hb-llm-sim: reports are marked SIMULATED

dispatch:
  --max-in-flight N              grader RPCs outstanding at most (default 512)
  --row-attempts N               attempts per row for UNAVAILABLE, RESOURCE_EXHAUSTED,
                                 DEADLINE_EXCEEDED, INTERNAL, UNKNOWN (default 3); other codes
                                 fail the row at once
  --row-timeout DURATION         deadline of one grader RPC (default 300s)
  --shard-index N                this shard (default $JOB_COMPLETION_INDEX, else 0)
  --shard-count N                shards; shard i grades the selected tasks at positions
                                 p % N == i (default 1). Join shards with `hb-orchestrator merge`
  --drain-timeout DURATION       on SIGTERM/SIGINT, time for in-flight rows (default 20s)
  --prompt-cache-key none|prompt_id
                                 prompt_id: send each task's prompt_id upstream as
                                 `prompt_cache_key` so its rubric items share OpenAI's prompt
                                 cache (default none: no key, as the reference; dry-run takes
                                 the same flag and prints the same bodies)

progress:
  --progress auto|tty|log|off    live line on a terminal, log lines otherwise (default auto)
  --progress-interval DURATION   between log lines (default 5s)
  --price-input-per-mtok USD     cost estimate: input tokens (default 2.00)
  --price-cached-input-per-mtok USD   cached input tokens (default 0.50)
  --price-output-per-mtok USD    output tokens (default 8.00)

exit codes:
  0  every row graded
  3  some rows failed after their attempts (their tasks are reported as not graded); run
     again to retry exactly those rows
  2  bad usage or bad input, including a journal from another run (not worth retrying)
  4  interrupted by SIGTERM/SIGINT: in-flight rows drained, partial reports marked incomplete
  1  internal error
)";

std::string RunOptions::RunDir() const {
  if (shard_count <= 1) return out;
  return JoinPath(out, absl::StrCat("shard-", shard_index));
}

absl::StatusOr<RunOptions> ParseRunArgs(const std::vector<std::string>& args) {
  std::map<std::string, std::vector<std::string>> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (responses files go in --responses)"));
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body;
    std::string value;
    bool has_value = false;
    if (const size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    name = absl::StrReplaceAll(name, {{"-", "_"}});
    if (!has_value && absl::StartsWith(name, "no") && BoolFlags().count(name.substr(2)) > 0) {
      name = name.substr(2);
      value = "false";
      has_value = true;
    }
    const bool known = SharedFlags().count(name) > 0 || OwnFlags().count(name) > 0 ||
                       GraderFlags().count(name) > 0;
    if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    if (!has_value) {
      if (BoolFlags().count(name) > 0) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag ", arg, " needs a value"));
      }
    }
    std::vector<std::string>& slot = values[name];
    if (!slot.empty() && name != "responses") {
      return absl::InvalidArgumentError(absl::StrCat("flag --", Dashed(name), " given twice"));
    }
    slot.push_back(value);
  }
  auto find = [&](const std::string& name) -> const std::string* {
    auto it = values.find(name);
    return it == values.end() ? nullptr : &it->second.back();
  };

  // Own and grader flags go through their absl definitions (reset to defaults first, so a
  // second parse in one process starts clean).
  for (const std::set<std::string>* names : {&OwnFlags(), &GraderFlags()}) {
    for (const std::string& name : *names) HB_RETURN_IF_ERROR(SetAbslFlag(name, find(name)));
  }

  RunOptions options;
  options.grader = absl::GetFlag(FLAGS_grader);
  options.max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  options.adaptive_concurrency = absl::GetFlag(FLAGS_adaptive_concurrency);
  options.row_attempts = absl::GetFlag(FLAGS_row_attempts);
  options.row_timeout = absl::GetFlag(FLAGS_row_timeout);
  options.shard_count = absl::GetFlag(FLAGS_shard_count);
  options.shard_index = absl::GetFlag(FLAGS_shard_index);
  if (find("shard_index") == nullptr) {
    const char* env = std::getenv("JOB_COMPLETION_INDEX");
    if (env != nullptr && *env != '\0' && !absl::ParseFlag(env, &options.shard_index, nullptr)) {
      return absl::InvalidArgumentError(
          absl::StrCat("JOB_COMPLETION_INDEX='", env, "' is not an integer"));
    }
  }
  options.force_new = absl::GetFlag(FLAGS_force_new);
  std::string progress_error;
  if (!ParseProgressMode(absl::GetFlag(FLAGS_progress), &options.progress, &progress_error)) {
    return absl::InvalidArgumentError(progress_error);
  }
  options.progress_interval = absl::GetFlag(FLAGS_progress_interval);
  options.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  options.simulated_verdicts = absl::GetFlag(FLAGS_simulated_verdicts);
  options.skip_invalid = absl::GetFlag(FLAGS_skip_invalid);

  if (const std::string* v = find("dataset")) options.dataset = *v;
  if (const std::string* v = find("out")) options.out = *v;
  if (const std::string* v = find("examples")) {
    HB_RETURN_IF_ERROR(ParseValue("examples", *v, &options.examples));
  }
  if (const std::string* v = find("seed"))
    HB_RETURN_IF_ERROR(ParseValue("seed", *v, &options.seed));
  if (const std::string* v = find("prompt_cache_key")) {
    if (*v != "none" && *v != "prompt_id") {
      return absl::InvalidArgumentError(
          absl::StrCat("--prompt-cache-key: expected none or prompt_id, got '", *v, "'"));
    }
    options.send_prompt_cache_key = *v == "prompt_id";
  }
  if (const std::string* v = find("price_input_per_mtok")) {
    HB_RETURN_IF_ERROR(ParseValue("price_input_per_mtok", *v, &options.prices.input_per_mtok));
  }
  if (const std::string* v = find("price_cached_input_per_mtok")) {
    HB_RETURN_IF_ERROR(
        ParseValue("price_cached_input_per_mtok", *v, &options.prices.cached_input_per_mtok));
  }
  if (const std::string* v = find("price_output_per_mtok")) {
    HB_RETURN_IF_ERROR(ParseValue("price_output_per_mtok", *v, &options.prices.output_per_mtok));
  }
  std::vector<std::string> response_specs;
  if (auto it = values.find("responses"); it != values.end()) {
    for (const std::string& value : it->second) {
      for (absl::string_view part : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
        response_specs.emplace_back(absl::StripAsciiWhitespace(part));
      }
    }
  }

  if (options.dataset.empty()) return absl::InvalidArgumentError("--dataset is required");
  if (options.out.empty()) return absl::InvalidArgumentError("--out is required");
  HB_ASSIGN_OR_RETURN(options.checkpoints, ParseCheckpointSpecs(response_specs));
  if (options.grader.empty()) {
    return absl::InvalidArgumentError("--grader must be 'embedded' or a gRPC target");
  }
  if (options.max_in_flight < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-in-flight must be >= 1, got ", options.max_in_flight));
  }
  if (options.row_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--row-attempts must be >= 1, got ", options.row_attempts));
  }
  if (options.row_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--row-timeout must be positive");
  }
  if (options.progress_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--progress-interval must be positive");
  }
  if (options.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain-timeout must not be negative");
  }
  if (options.examples == 0 || options.examples < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--examples must be a positive count or -1 (all), got ", options.examples));
  }
  for (double price : {options.prices.input_per_mtok, options.prices.cached_input_per_mtok,
                       options.prices.output_per_mtok}) {
    if (price < 0) return absl::InvalidArgumentError("--price-* flags must not be negative");
  }
  HB_RETURN_IF_ERROR(ShardTaskPositions(0, options.shard_index, options.shard_count).status());
  return options;
}

int RunWithOptions(const RunOptions& options) {
  if (options.simulated_verdicts) PrintSimulatedBanner();
  // Before any thread starts (the journal's writer, gRPC's pollers): a SIGTERM must reach the
  // watcher, never a thread whose default action would kill the process.
  absl::Mutex stop_mu;
  Dispatcher* active = nullptr;
  bool stop_requested = false;
  SignalWatcher watcher([&](int signal, int count) {
    absl::MutexLock lock(&stop_mu);
    if (count == 1) {
      HB_LOG_WARN("{} received: stopping (in-flight rows get {} to finish)",
                  signal == SIGTERM ? "SIGTERM" : "SIGINT",
                  absl::FormatDuration(options.drain_timeout));
      stop_requested = true;
      if (active != nullptr) active->RequestStop();
    } else {
      HB_LOG_WARN("second signal: exiting at once (committed rows are kept in the journal)");
      std::_Exit(kRunExitInterrupted);
    }
  });

  // ---- Inputs. Every failure here is the caller's: exit 2.
  LoadOptions load_options;
  load_options.skip_invalid = options.skip_invalid;
  absl::StatusOr<Dataset> loaded = LoadDataset(options.dataset, load_options);
  if (!loaded.ok()) return Fail(InputErrorCode(loaded.status()), loaded.status());
  Dataset& full = *loaded;
  if (!full.skipped.empty()) {
    HB_LOG_WARN("skipped {} invalid dataset lines (--skip-invalid); first: line {}: {}",
                full.skipped.size(), full.skipped.front().line, full.skipped.front().error);
  }
  std::vector<LoadedCheckpoint> checkpoints;
  for (const CheckpointSpec& spec : options.checkpoints) {
    absl::StatusOr<ResponseSet> responses = LoadResponses(spec.path, full);
    if (!responses.ok()) return Fail(InputErrorCode(responses.status()), responses.status());
    checkpoints.push_back(LoadedCheckpoint{spec, *std::move(responses)});
  }
  if (options.examples > 0) SelectExamples(full, static_cast<size_t>(options.examples));
  absl::StatusOr<std::vector<size_t>> positions =
      ShardTaskPositions(full.examples.size(), options.shard_index, options.shard_count);
  if (!positions.ok()) return Fail(kRunExitUsage, positions.status());
  const Dataset dataset = SubsetDataset(full, *positions);

  absl::StatusOr<GraderServerOptions> grader_options = GraderServerOptionsFromFlags();
  if (!grader_options.ok()) return Fail(kRunExitUsage, grader_options.status());
  absl::StatusOr<GraderTemplate> grader_template = GraderTemplate::Load(
      grader_options->template_path, grader_options->require_reference_template);
  if (!grader_template.ok()) {
    return Fail(InputErrorCode(grader_template.status()), grader_template.status());
  }

  // ---- Journal.
  const std::string run_dir = options.RunDir();
  if (absl::Status made = MakeDirs(run_dir); !made.ok()) return Fail(kRunExitUsage, made);
  SqliteVerdictStoreOptions journal_options;
  journal_options.path = JoinPath(run_dir, kJournalFileName);
  journal_options.force_new = options.force_new;
  JournalMeta& meta = journal_options.meta;
  meta.dataset_sha256 = full.sha256;
  meta.template_sha256 = grader_template->sha256();
  meta.grader_model = grader_options->settings.model;
  meta.grader_temperature = grader_options->settings.temperature;
  meta.grader_max_tokens = grader_options->settings.max_tokens;
  meta.grader_system_message = grader_options->settings.system_message;
  meta.tool_version = HB_PROJECT_VERSION;
  for (const LoadedCheckpoint& c : checkpoints) {
    meta.responses_sha256.emplace_back(c.spec.name, c.responses.sha256);
  }
  absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> journal =
      SqliteVerdictStore::Open(journal_options);
  if (!journal.ok()) {
    return Fail(journal.status().code() == absl::StatusCode::kFailedPrecondition ? kRunExitUsage
                                                                                 : kRunExitInternal,
                journal.status());
  }
  if (!(*journal)->moved_aside_path().empty()) {
    HB_LOG_WARN("--force-new: moved the old journal to {}", (*journal)->moved_aside_path());
  }
  VerdictStore& store = **journal;

  // ---- Plan.
  absl::flat_hash_set<RowKey> done;
  for (const LoadedCheckpoint& c : checkpoints) {
    absl::StatusOr<std::vector<RowRecord>> rows = store.Rows(c.spec.name);
    if (!rows.ok()) return Fail(kRunExitInternal, rows.status());
    for (RowRecord& row : *rows) {
      if (row.ok) done.insert(std::move(row.key));
    }
  }
  std::vector<const Example*> tasks;
  for (const Example& e : dataset.examples) tasks.push_back(&e);
  std::vector<CheckpointRows> plan_inputs;
  int64_t total_rows = 0;
  for (const LoadedCheckpoint& c : checkpoints) {
    const ResponseSet* responses = &c.responses;
    plan_inputs.push_back(CheckpointRows{
        &c.spec.name, [responses](const std::string& id) { return responses->Find(id); }});
    for (const Example* e : tasks) {
      if (responses->Find(e->prompt_id) != nullptr) {
        total_rows += static_cast<int64_t>(e->rubrics.size());
      }
    }
  }
  std::vector<PlannedRow> rows = PlanRows(tasks, plan_inputs, done);
  const int64_t already_done = total_rows - static_cast<int64_t>(rows.size());
  HB_LOG_INFO(
      "run: {} checkpoint(s), {} task(s) in shard {}/{}, {} rows: {} already graded in the "
      "journal, {} to grade; writing to {}",
      checkpoints.size(), dataset.examples.size(), options.shard_index, options.shard_count,
      total_rows, already_done, rows.size(), run_dir);

  // ---- Grade. Signals are blocked from here on in every thread we start.
  bool interrupted = false;
  absl::Status dispatch_status;
  if (!rows.empty()) {
    std::unique_ptr<GraderServer> embedded;
    std::string target = options.grader;
    if (options.grader == "embedded") {
      GraderServerOptions server_options = *grader_options;
      server_options.listen_address = "127.0.0.1:0";
      absl::StatusOr<std::unique_ptr<GraderServer>> server = GraderServer::Start(server_options);
      if (!server.ok()) return Fail(InputErrorCode(server.status()), server.status());
      embedded = *std::move(server);
      target = absl::StrCat("ipv4:127.0.0.1:", embedded->port());
      HB_LOG_INFO("embedded grader listening on 127.0.0.1:{} (upstream {})", embedded->port(),
                  server_options.llm.base_url);
    }
    absl::StatusOr<std::unique_ptr<GrpcGraderClient>> client = GrpcGraderClient::Create(target);
    if (!client.ok()) return Fail(kRunExitUsage, client.status());

    ProgressReporter reporter(options.progress, stderr, options.prices);
    DispatcherOptions dispatcher_options;
    dispatcher_options.max_in_flight = options.max_in_flight;
    dispatcher_options.adaptive_concurrency = options.adaptive_concurrency;
    dispatcher_options.row_attempts = options.row_attempts;
    dispatcher_options.row_timeout = options.row_timeout;
    dispatcher_options.drain_timeout = options.drain_timeout;
    dispatcher_options.send_prompt_cache_key = options.send_prompt_cache_key;
    // A live line redraws often; log lines follow --progress-interval.
    dispatcher_options.progress_interval =
        reporter.mode() == ProgressMode::kTty
            ? std::min(options.progress_interval, absl::Milliseconds(250))
            : options.progress_interval;
    dispatcher_options.on_progress = [&](const DispatchStats& s) {
      ProgressSnapshot snapshot;
      snapshot.total_rows = total_rows;
      snapshot.done_this_run = s.ok_rows + s.failed_rows;
      snapshot.done_rows = already_done + snapshot.done_this_run;
      snapshot.failed_rows = s.failed_rows;
      snapshot.retries = s.retries;
      snapshot.in_flight = s.in_flight;
      if (options.adaptive_concurrency) {
        snapshot.window = s.window;
        snapshot.paced_rate = s.paced_rate;
      }
      snapshot.prompt_tokens = s.prompt_tokens;
      snapshot.cached_tokens = s.cached_tokens;
      snapshot.completion_tokens = s.completion_tokens;
      snapshot.elapsed = s.elapsed;
      snapshot.stopping = s.stopping;
      reporter.Report(snapshot);
    };
    Dispatcher dispatcher(client->get(), &store, dispatcher_options);
    {
      absl::MutexLock lock(&stop_mu);
      active = &dispatcher;
      if (stop_requested) dispatcher.RequestStop();
    }
    const DispatchStats stats = dispatcher.Run(std::move(rows));
    {
      absl::MutexLock lock(&stop_mu);
      active = nullptr;
    }
    reporter.Finish();
    interrupted = stats.stopping;
    dispatch_status = dispatcher.status();
    client->reset();
    if (embedded != nullptr) embedded->Shutdown(absl::Seconds(1));
  }
  absl::Status flushed = store.Flush();
  if (!dispatch_status.ok()) return Fail(kRunExitInternal, dispatch_status);
  if (!flushed.ok()) return Fail(kRunExitInternal, flushed);

  // ---- Reports, from the journal.
  std::vector<CheckpointResult> results;
  int64_t failed_rows = 0;
  int64_t missing_rows = 0;
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    const LoadedCheckpoint& c = checkpoints[i];
    absl::StatusOr<std::vector<RowRecord>> journal_rows = store.Rows(c.spec.name);
    if (!journal_rows.ok()) return Fail(kRunExitInternal, journal_rows.status());
    std::vector<VerdictRow> verdicts;
    std::vector<RowFailure> failures;
    verdicts.reserve(journal_rows->size());
    for (RowRecord& row : *journal_rows) {
      // Only this run's tasks (the journal may hold others after a change of --examples).
      const Example* example = dataset.Find(row.key.prompt_id);
      if (example == nullptr || c.responses.Find(row.key.prompt_id) == nullptr ||
          row.key.rubric_index >= static_cast<int>(example->rubrics.size())) {
        continue;
      }
      if (row.ok) {
        VerdictRow v;
        v.prompt_id = std::move(row.key.prompt_id);
        v.rubric_index = row.key.rubric_index;
        v.criteria_met = row.criteria_met;
        v.explanation = std::move(row.explanation);
        v.attempts = row.attempts;
        v.prompt_tokens = row.prompt_tokens;
        v.cached_tokens = row.cached_tokens;
        v.completion_tokens = row.completion_tokens;
        verdicts.push_back(std::move(v));
      } else {
        failures.push_back(RowFailure{row.key.prompt_id, row.key.rubric_index, row.error});
      }
    }
    std::vector<RowRecord>().swap(*journal_rows);  // moved from; free it before the reports
    ReportContext context;
    context.checkpoint = c.spec.name;
    context.dataset_path = options.dataset;
    context.dataset_sha256 = full.sha256;
    context.responses_path = c.spec.path;
    context.responses_sha256 = c.responses.sha256;
    context.template_sha256 = grader_template->sha256();
    context.grader = grader_options->settings;
    context.seed = options.seed;
    context.simulated = options.simulated_verdicts;
    context.incomplete = interrupted;
    context.grader_endpoint = options.grader == "embedded"
                                  ? absl::StrCat("embedded (", grader_options->llm.base_url, ")")
                                  : options.grader;
    context.examples = options.examples;
    context.checkpoint_index = static_cast<int>(i);
    absl::StatusOr<CheckpointResult> result = WriteCheckpointReport(
        dataset, c.responses, verdicts, failures, context, JoinPath(run_dir, c.spec.name));
    if (!result.ok()) return Fail(kRunExitInternal, result.status());
    failed_rows += result->failed_rows;
    missing_rows += result->rows - result->graded_rows - result->failed_rows;
    std::fprintf(stderr,
                 "%s: score %.4f over %lld graded task(s), %lld not graded; rows %lld graded, "
                 "%lld failed, %lld missing -> %s\n",
                 c.spec.name.c_str(), result->score, static_cast<long long>(result->graded),
                 static_cast<long long>(result->not_graded),
                 static_cast<long long>(result->graded_rows),
                 static_cast<long long>(result->failed_rows),
                 static_cast<long long>(result->rows - result->graded_rows - result->failed_rows),
                 JoinPath(JoinPath(run_dir, c.spec.name), "report.html").c_str());
    results.push_back(*std::move(result));
  }
  if (results.size() >= 2) {
    absl::Status compared = WriteComparison(results, options.seed, run_dir);
    if (!compared.ok()) return Fail(kRunExitInternal, compared);
  }
  if (options.simulated_verdicts) PrintSimulatedBanner();
  if (interrupted) {
    std::fprintf(stderr,
                 "hb-orchestrator run: interrupted; partial reports (marked incomplete) written. "
                 "Run the same command again to grade the %lld missing row(s).\n",
                 static_cast<long long>(missing_rows));
    return kRunExitInterrupted;
  }
  if (failed_rows > 0 || missing_rows > 0) {
    std::fprintf(stderr,
                 "hb-orchestrator run: %lld row(s) failed and %lld missing; their tasks are "
                 "reported as not graded (see failures.jsonl). Run the same command again to "
                 "retry them.\n",
                 static_cast<long long>(failed_rows), static_cast<long long>(missing_rows));
    return kRunExitRowsFailed;
  }
  return kRunExitOk;
}

int RunCommand(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h" || arg == "-help" || arg == "--helpshort") {
      std::fputs(kRunUsage, stdout);
      return kRunExitOk;
    }
  }
  InitLogging("info");
  absl::StatusOr<RunOptions> options = ParseRunArgs(args);
  if (!options.ok()) {
    std::fprintf(stderr, "hb-orchestrator run: %s (see hb-orchestrator run --help)\n",
                 std::string(options.status().message()).c_str());
    return kRunExitUsage;
  }
  return RunWithOptions(*options);
}

}  // namespace hb
