// hb-orchestrator: grades model responses on HealthBench through hb-grader replicas (`run`),
// and the offline subcommands around it (`tasks`, `dry-run`, `score`, `merge`).
//
// Flags are Abseil flags (so `--helpfull` lists them with their defaults), parsed here against
// a per-subcommand allow list so that a typo or a flag of another subcommand is a usage error
// (exit 2, one line) rather than silently ignored. Flag names take '-' or '_'.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/healthbench/types.h"
#include "orchestrator/commands/offline_commands.h"

// --grader-template, --require-reference-template, --llm-model, --llm-temperature and
// --llm-max-tokens are hb-grader's own flags (defined there), shared so that `run` and
// `dry-run` agree.
#include "common/base/flags_usage.h"
#include "common/base/process.h"
#include "grader_service/grader_flags.h"
#include "orchestrator/run/run_command.h"

ABSL_FLAG(std::string, dataset, "", "HealthBench JSONL file (plain or gzip)");
ABSL_FLAG(std::string, responses, "",
          "responses JSONL {prompt_id, response, system_prompt?}; merge: NAME=PATH override");
ABSL_FLAG(std::string, verdicts, "", "verdicts.jsonl to score");
ABSL_FLAG(std::string, failures, "", "optional failures.jsonl to report with the verdicts");
ABSL_FLAG(std::string, out, "", "output file (tasks, dry-run) or folder (score, merge)");
ABSL_FLAG(int64_t, examples, -1, "the reference's --examples N selection; -1 = all tasks");
ABSL_FLAG(uint32_t, seed, 0, "numpy seed of the bootstrap");
ABSL_FLAG(std::string, checkpoint, "", "checkpoint name (default: responses file name)");
ABSL_FLAG(std::string, prompt_cache_key, "none",
          "none (no key, as the reference) or prompt_id (each task's prompt_id as the upstream "
          "prompt_cache_key); run and dry-run");
ABSL_FLAG(std::string, grader_endpoint, "", "grader endpoint recorded in the provenance");
ABSL_FLAG(bool, simulated, false, "the verdicts came from the simulator (report banner)");
ABSL_FLAG(double, price_input_per_mtok, 2.00, "USD per million input tokens");
ABSL_FLAG(double, price_cached_input_per_mtok, 0.50, "USD per million cached input tokens");
ABSL_FLAG(double, price_output_per_mtok, 8.00, "USD per million output tokens");
ABSL_FLAG(int64_t, est_output_tokens_per_row, 60, "estimated grader output tokens per row");

namespace {

constexpr char kUsage[] = R"(hb-orchestrator: grade model responses on HealthBench.

usage: hb-orchestrator <command> [flags] [args]

commands:
  run       grade a checkpoint through hb-grader replicas (see `hb-orchestrator run --help`)

  tasks     --dataset D --out F [--examples N]
            Write the task list: one JSONL line {prompt_id, messages, prompt_text} per task.

  dry-run   --dataset D --responses R --out F [--examples N] [--grader-template PATH]
            [--require-reference-template=true] [--llm-model M] [--llm-temperature T]
            [--llm-max-tokens K] [--prompt-cache-key K]
            [--price-input-per-mtok 2.00] [--price-cached-input-per-mtok 0.50]
            [--price-output-per-mtok 8.00] [--est-output-tokens-per-row 60]
            Write every grader request a run would send, one JSONL line per rubric row of each
            task with a response: {prompt_id, rubric_index, request_sha256, request}, where
            request is the exact chat-completions body (request_sha256 hashes its bytes).
            Prints the row count, the tasks skipped for lack of a response, estimated tokens
            (UTF-8 bytes of the grader messages / 4) and cost, with and without best-case
            prompt caching (prefixes of >= 1024 tokens shared with a task's first row).

  score     --dataset D --responses R --verdicts V --out DIR [--failures F] [--seed S]
            [--examples N] [--checkpoint NAME] [--grader-template PATH]
            [--require-reference-template=true] [--llm-model M] [--llm-temperature T]
            [--llm-max-tokens K] [--grader-endpoint URL] [--simulated]
            Score a checkpoint from verdicts.jsonl without grading and write DIR/tasks.jsonl,
            summary.json, verdicts.jsonl, failures.jsonl and report.html. The grader flags
            and the template's sha256 are recorded in the provenance (--grader-template=""
            records none).

  merge     --out DIR [--dataset PATH] [--responses NAME=PATH]... SHARD_DIR...
            Merge sharded runs: each SHARD_DIR holds <checkpoint>/summary.json and
            <checkpoint>/verdicts.jsonl (+ failures.jsonl). The shards' provenance must agree;
            the dataset and responses are reloaded from the recorded paths (or the overrides)
            and must keep their recorded sha256. Writes DIR/<checkpoint>/ like an unsharded run,
            plus DIR/comparison.json and comparison.html for several checkpoints.

flags:
  --dataset PATH                  HealthBench JSONL (plain or gzip)
  --responses PATH                responses JSONL {prompt_id, response, system_prompt?}
  --verdicts PATH                 verdicts.jsonl {prompt_id, rubric_index, criteria_met,
                                  explanation} (score)
  --failures PATH                 failures.jsonl {prompt_id, rubric_index, reason} (score)
  --out PATH                      output file (tasks, dry-run) or folder (score, merge)
  --examples N                    the reference's random.Random(0).sample selection of N tasks
                                  (default -1: every task, in file order)
  --seed S                        numpy seed of the bootstrap (default 0)
  --checkpoint NAME               checkpoint name (default: responses file name without
                                  .gz/.jsonl/.json)
  --grader-template PATH          grader template (default data/grader_template.txt)
  --require-reference-template    refuse a template whose sha256 differs from the reference's
                                  (default true; =false allows a synthetic template)
  --llm-model M                   grader model (default gpt-4.1-2025-04-14)
  --llm-temperature T             grader temperature (default 0.5)
  --llm-max-tokens K              grader max_tokens (default 2048)
                                  (the grader's system message is always the reference's
                                  "You are a helpful assistant.", as in hb-grader)
  --prompt-cache-key none|prompt_id
                                  prompt_id: each task's prompt_id as `prompt_cache_key` in
                                  its request bodies, as `run --prompt-cache-key=prompt_id`
                                  sends them (default none: no key, as the reference)
  --grader-endpoint URL           grader endpoint to record (score; default none)
  --simulated                     mark the report as simulated (score)
  --price-input-per-mtok USD      default 2.00 (gpt-4.1 list price)
  --price-cached-input-per-mtok   default 0.50
  --price-output-per-mtok USD     default 8.00
  --est-output-tokens-per-row N   default 60

Exit status: 0 on success, 2 on bad usage or bad input (one line on stderr); `run`
documents its own exit codes.
)";

// Which flags each offline subcommand takes.
const std::map<std::string, std::set<std::string>>& AllowedFlags() {
  static const auto* allowed = new std::map<std::string, std::set<std::string>>{
      {"tasks", {"dataset", "examples", "out"}},
      {"dry-run",
       {"dataset", "responses", "out", "examples", "grader_template", "require_reference_template",
        "llm_model", "llm_temperature", "llm_max_tokens", "prompt_cache_key",
        "price_input_per_mtok", "price_cached_input_per_mtok", "price_output_per_mtok",
        "est_output_tokens_per_row"}},
      {"score",
       {"dataset", "responses", "verdicts", "failures", "out", "seed", "examples", "checkpoint",
        "grader_template", "require_reference_template", "llm_model", "llm_temperature",
        "llm_max_tokens", "grader_endpoint", "simulated"}},
      {"merge", {"out", "dataset", "responses"}},
  };
  return *allowed;
}

struct ParsedArgs {
  std::vector<std::string> positional;
  // Flag name (underscores) -> every value given, in order.
  std::map<std::string, std::vector<std::string>> values;
};

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "hb-orchestrator%s%s: %s (see hb-orchestrator --help)\n",
               command.empty() ? "" : " ", command.c_str(), message.c_str());
  return 2;
}

bool IsBoolFlag(const absl::CommandLineFlag* flag) {
  return flag != nullptr && flag->IsOfType<bool>();
}

// Splits the arguments after the command into flags and positional arguments, and applies the
// flags. Returns an error message, or "" on success.
std::string ParseArgs(const std::string& command, const std::vector<std::string>& args,
                      ParsedArgs& parsed) {
  const std::set<std::string>& allowed = AllowedFlags().at(command);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    std::string body = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    name = absl::StrReplaceAll(name, {{"-", "_"}});
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no") &&
        IsBoolFlag(absl::FindCommandLineFlag(name.substr(2)))) {
      name = name.substr(2);
      flag = absl::FindCommandLineFlag(name);
      value = "false";
      has_value = true;
    }
    if (flag == nullptr || allowed.count(name) == 0) {
      return flag == nullptr ? absl::StrCat("unknown flag ", arg)
                             : absl::StrCat("flag ", arg, " does not apply to '", command, "'");
    }
    if (!has_value) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::StrCat("flag ", arg, " needs a value");
      }
    }
    std::vector<std::string>& values = parsed.values[name];
    bool repeatable = command == "merge" && name == "responses";
    if (!values.empty() && !repeatable) return absl::StrCat("flag --", name, " given twice");
    values.push_back(value);
    std::string error;
    if (!repeatable && !flag->ParseFrom(value, &error)) {
      return absl::StrCat("invalid value '", value, "' for --", name, ": ", error);
    }
  }
  return "";
}

hb::GraderSettings GraderFromFlags() {
  hb::GraderSettings grader;
  grader.model = absl::GetFlag(FLAGS_llm_model);
  grader.temperature = absl::GetFlag(FLAGS_llm_temperature);
  grader.max_tokens = absl::GetFlag(FLAGS_llm_max_tokens);
  return grader;
}

absl::StatusOr<std::string> RunOffline(const std::string& command, const ParsedArgs& parsed) {
  if (command != "merge" && !parsed.positional.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unexpected argument '", parsed.positional.front(), "'"));
  }
  if (command == "tasks") {
    hb::TasksOptions options;
    options.dataset = absl::GetFlag(FLAGS_dataset);
    options.examples = absl::GetFlag(FLAGS_examples);
    options.out = absl::GetFlag(FLAGS_out);
    return hb::RunTasks(options);
  }
  if (command == "dry-run") {
    hb::DryRunOptions options;
    options.dataset = absl::GetFlag(FLAGS_dataset);
    options.responses = absl::GetFlag(FLAGS_responses);
    options.out = absl::GetFlag(FLAGS_out);
    options.examples = absl::GetFlag(FLAGS_examples);
    options.grader_template = absl::GetFlag(FLAGS_grader_template);
    options.require_reference_template = absl::GetFlag(FLAGS_require_reference_template);
    options.grader = GraderFromFlags();
    const std::string cache_key_mode = absl::GetFlag(FLAGS_prompt_cache_key);
    if (cache_key_mode != "none" && cache_key_mode != "prompt_id") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--prompt-cache-key: expected none or prompt_id, got '", cache_key_mode, "'"));
    }
    options.prompt_cache_key_per_task = cache_key_mode == "prompt_id";
    options.price_input_per_mtok = absl::GetFlag(FLAGS_price_input_per_mtok);
    options.price_cached_input_per_mtok = absl::GetFlag(FLAGS_price_cached_input_per_mtok);
    options.price_output_per_mtok = absl::GetFlag(FLAGS_price_output_per_mtok);
    options.est_output_tokens_per_row = absl::GetFlag(FLAGS_est_output_tokens_per_row);
    return hb::RunDryRun(options);
  }
  if (command == "score") {
    hb::ScoreOptions options;
    options.dataset = absl::GetFlag(FLAGS_dataset);
    options.responses = absl::GetFlag(FLAGS_responses);
    options.verdicts = absl::GetFlag(FLAGS_verdicts);
    options.failures = absl::GetFlag(FLAGS_failures);
    options.out = absl::GetFlag(FLAGS_out);
    options.seed = absl::GetFlag(FLAGS_seed);
    options.examples = absl::GetFlag(FLAGS_examples);
    options.checkpoint = absl::GetFlag(FLAGS_checkpoint);
    options.grader_template = absl::GetFlag(FLAGS_grader_template);
    options.require_reference_template = absl::GetFlag(FLAGS_require_reference_template);
    options.grader = GraderFromFlags();
    options.grader_endpoint = absl::GetFlag(FLAGS_grader_endpoint);
    options.simulated = absl::GetFlag(FLAGS_simulated);
    return hb::RunScore(options);
  }
  // merge
  hb::MergeOptions options;
  options.out = absl::GetFlag(FLAGS_out);
  options.shard_dirs = parsed.positional;
  auto it = parsed.values.find("dataset");
  if (it != parsed.values.end()) options.dataset = it->second.back();
  it = parsed.values.find("responses");
  if (it != parsed.values.end()) {
    for (const std::string& value : it->second) {
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--responses for merge takes NAME=PATH, got '", value, "'"));
      }
      if (!options.responses.emplace(value.substr(0, eq), value.substr(eq + 1)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("--responses names checkpoint '", value.substr(0, eq), "' twice"));
      }
    }
  }
  return hb::RunMerge(options);
}

bool IsHelp(const std::string& arg) {
  return arg == "--help" || arg == "-help" || arg == "-h" || arg == "--helpshort" || arg == "help";
}

}  // namespace

int main(int argc, char** argv) {
  hb::TuneProcess();
  hb::InitFlagsUsage(kUsage);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return UsageError("", "missing command");
  const std::string command = args.front();
  if (command == "run") {
    return hb::RunCommand(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  for (const std::string& arg : args) {
    if (arg == "--helpfull" || arg == "--version") {
      absl::ParseCommandLine(argc, argv);  // prints and exits
      return 0;
    }
    if (IsHelp(arg)) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  if (AllowedFlags().count(command) == 0) {
    return UsageError("", absl::StrCat("unknown command '", command, "'"));
  }
  ParsedArgs parsed;
  std::string error =
      ParseArgs(command, std::vector<std::string>(args.begin() + 1, args.end()), parsed);
  if (!error.empty()) return UsageError(command, error);
  absl::StatusOr<std::string> result = RunOffline(command, parsed);
  if (!result.ok()) {
    std::string message(result.status().message());
    // One line: multi-line messages (never expected) are folded.
    message = absl::StrReplaceAll(message, {{"\n", " "}});
    std::fprintf(stderr, "hb-orchestrator %s: %s\n", command.c_str(), message.c_str());
    return 2;
  }
  std::cout << *result << std::endl;
  return 0;
}
