// hb-orchestrator's offline subcommands, run as a subprocess of the built binary, on the
// project's synthetic example (examples/) and on the real main sample (shared data).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/report/checkpoint_report.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::kMainHead30;
using ::hb::testing::MakeTempDir;
using ::hb::testing::ReferenceTemplatePath;
using ::hb::testing::SharedDataFile;
using ::hb::testing::SourceDir;
using ::testing::ContainsRegex;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using RunResult = ::hb::testing::ProcessResult;

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

void Write(const std::string& path, const std::string& contents) {
  ASSERT_THAT(WriteFileAtomically(path, contents), ::hb::testing::IsOk());
}

// Runs `binary` with `args` (and `env` added to this process's environment).
RunResult RunBinary(const std::string& binary, const std::vector<std::string>& args,
                    const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return ::hb::testing::RunProcess(argv, env);
}

RunResult RunCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return RunBinary(BinaryDir() + "/orchestrator/hb-orchestrator", args, env);
}

rapidjson::Document ParseJson(const std::string& text) {
  rapidjson::Document doc;
  // Full precision: numbers must read back bit for bit.
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(text.c_str());
  EXPECT_FALSE(doc.HasParseError()) << text.substr(0, 300);
  return doc;
}

// summary.json without provenance.shards (the shard folders a merge used), compact.
std::string SummaryWithoutShards(const std::string& text) {
  rapidjson::Document doc = ParseJson(text);
  if (!doc.IsObject() || !doc.HasMember("provenance")) return text;
  doc["provenance"].RemoveMember("shards");
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return buffer.GetString();
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

std::string Str(const rapidjson::Value& value) {
  return std::string(value.GetString(), value.GetStringLength());
}

// Python's repr parses back to the exact double: compare numbers bit for bit.
double Num(const rapidjson::Value& value) { return value.GetDouble(); }

class OrchestratorCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    examples_ = SourceDir() + "/examples";
    synthetic_template_ = dir_ + "/template.txt";
    Write(synthetic_template_, "Judge this.\n<<conversation>>\n---\n<<rubric_item>>\nJSON only.");
  }

  // A responses file for every task of `dataset` except those in `skip`: varied text with
  // non-ASCII, quotes, markup and (task 5) a literal <<rubric_item>>; every third task has a
  // policy system prompt.
  std::string WriteResponses(const Dataset& dataset, const std::string& name,
                             const std::vector<size_t>& skip = {}) {
    std::string text;
    for (size_t i = 0; i < dataset.examples.size(); ++i) {
      if (std::find(skip.begin(), skip.end(), i) != skip.end()) continue;
      std::string reply = absl::StrCat("Synthetic reply ", i, " \xE2\x80\x94 \"quoted\" <b>x</b>\n",
                                       i == 5 ? "see <<rubric_item>> here" : "line two");
      absl::StrAppend(&text, "{\"prompt_id\":", JsonQuote(dataset.examples[i].prompt_id),
                      ",\"response\":", JsonQuote(reply));
      if (i % 3 == 0) absl::StrAppend(&text, ",\"system_prompt\":", JsonQuote("Be careful."));
      absl::StrAppend(&text, "}\n");
    }
    std::string path = dir_ + "/" + name;
    Write(path, text);
    return path;
  }

  std::string dir_, examples_, synthetic_template_;
};

// Met pattern of the synthetic verdicts: deterministic, mixes met and unmet items of either sign.
bool MetA(size_t task, size_t item) { return (task * 7 + item * 3) % 5 < 2; }
bool MetB(size_t task, size_t item) { return (task * 5 + item) % 3 != 0; }

std::string VerdictLine(const std::string& prompt_id, size_t index, bool met) {
  return absl::StrCat("{\"prompt_id\":", JsonQuote(prompt_id), ",\"rubric_index\":", index,
                      ",\"criteria_met\":", met ? "true" : "false",
                      ",\"explanation\":", JsonQuote(absl::StrCat("row ", index)), "}\n");
}

// --- usage --------------------------------------------------------------------------------

TEST_F(OrchestratorCliTest, HelpListsEverySubcommand) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"-h"}, {"help"}, {"--helpfull"}}) {
    RunResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    for (const char* text : {"usage: hb-orchestrator <command>", "\n  run ", "\n  tasks ",
                             "\n  dry-run ", "\n  score ", "\n  merge ", "Exit status"}) {
      EXPECT_THAT(r.out, HasSubstr(text)) << absl::StrJoin(args, " ");
    }
  }
}

// Each subcommand's --help lists its own flags, and only those (it used to print the global
// help for every subcommand but `run`).
TEST_F(OrchestratorCliTest, EverySubcommandHelpListsItsOwnFlags) {
  struct Case {
    std::string command;
    std::vector<std::string> flags;
    std::vector<std::string> not_flags;
  };
  const std::vector<Case> cases = {
      {"tasks", {"--dataset", "--out", "--examples"}, {"--responses", "--llm-model", "--seed"}},
      {"dry-run",
       {"--dataset", "--responses", "--out", "--examples", "--grader-template",
        "--require-reference-template", "--llm-model", "--llm-temperature", "--llm-max-tokens",
        "--prompt-cache-key", "--price-input-per-mtok", "--price-cached-input-per-mtok",
        "--price-output-per-mtok", "--est-output-tokens-per-row"},
       {"--verdicts", "--seed", "--llm-base-url"}},
      {"score",
       {"--dataset", "--responses", "--verdicts", "--failures", "--out", "--seed", "--examples",
        "--checkpoint", "--grader-template", "--require-reference-template", "--llm-model",
        "--llm-temperature", "--llm-max-tokens", "--grader-endpoint", "--simulated"},
       {"--prompt-cache-key", "--price-input-per-mtok", "--est-output-tokens-per-row"}},
      {"merge", {"--out", "--dataset", "--responses", "SHARD_DIR"}, {"--verdicts", "--seed"}},
  };
  for (const Case& c : cases) {
    RunResult r = RunCli({c.command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("Usage: hb-orchestrator " + c.command + " [OPTIONS]"));
    for (const std::string& flag : c.flags) {
      EXPECT_THAT(r.out, ContainsRegex("\n  " + flag + "[ =\n]")) << c.command;
    }
    for (const std::string& flag : c.not_flags) {
      EXPECT_THAT(r.out, Not(HasSubstr(flag + " "))) << c.command;
    }
  }
}

// hb-grader and hb-llm-sim --help: exit 0 and their own text on stdout (they used to exit 1
// and list Abseil's flags with the build paths of their definitions).
TEST_F(OrchestratorCliTest, ServerBinariesHelpExitsZero) {
  for (const std::string& binary :
       {BinaryDir() + "/grader_service/hb-grader", BinaryDir() + "/simulator/hb-llm-sim"}) {
    RunResult r = RunBinary(binary, {"--help"});
    EXPECT_EQ(r.exit_code, 0) << binary << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_THAT(r.out, HasSubstr("\n  --listen HOST:PORT"));
    EXPECT_THAT(r.out, Not(HasSubstr(".cc")));
    EXPECT_THAT(r.out, Not(HasSubstr("/work/")));
    RunResult bad = RunBinary(binary, {"--listen"});
    EXPECT_EQ(bad.exit_code, 2);
    const std::string name = binary.substr(binary.rfind('/') + 1);
    EXPECT_EQ(bad.err, name + ": flag --listen needs a value (see " + name + " --help)\n");
  }
  RunResult grader = RunBinary(BinaryDir() + "/grader_service/hb-grader", {"--help"});
  for (const char* flag : {"--llm-base-url", "--llm-model", "--grader-template", "--max-attempts",
                           "--metrics-listen", "--drain-timeout"}) {
    EXPECT_THAT(grader.out, HasSubstr(flag));
  }
  RunResult zero = RunBinary(BinaryDir() + "/grader_service/hb-grader", {"--llm-max-tokens=0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_EQ(zero.err, "hb-grader: --llm-max-tokens must be positive (see hb-grader --help)\n");
  RunResult rate = RunBinary(BinaryDir() + "/simulator/hb-llm-sim", {"--fault-429=2"});
  EXPECT_EQ(rate.exit_code, 2);
  EXPECT_EQ(rate.err, "hb-llm-sim: fault rates must be in [0, 1] (see hb-llm-sim --help)\n");
}

// The servers keep the last value of a repeated flag (as with Abseil flags: scripts and tests
// append overrides); hb-orchestrator rejects a repeat.
TEST_F(OrchestratorCliTest, ServerBinariesTakeTheLastValueOfARepeatedFlag) {
  RunResult sim = RunBinary(BinaryDir() + "/simulator/hb-llm-sim",
                            {"--fault-429=2", "--fault_429=0.5", "--listen=nocolon"});
  EXPECT_EQ(sim.exit_code, 2);
  EXPECT_EQ(sim.err,
            "hb-llm-sim: --listen must be host:port, got 'nocolon': it has no port; e.g. "
            "127.0.0.1:8080, [::1]:8080 or localhost:0 (port 0 picks a free one) "
            "(see hb-llm-sim --help)\n");
  RunResult grader = RunBinary(BinaryDir() + "/grader_service/hb-grader",
                               {"--llm-max-tokens=0", "--llm-max-tokens", "5", "--max-attempts=0"});
  EXPECT_EQ(grader.exit_code, 2);
  EXPECT_EQ(grader.err, "hb-grader: --max-attempts must be at least 1 (see hb-grader --help)\n");
}

TEST_F(OrchestratorCliTest, BadUsageIsOneLineAndExitCode2) {
  const std::string d = examples_ + "/dataset.jsonl";
  const std::string hint = " (see hb-orchestrator --help)\n";
  const std::string tasks_hint = " (see hb-orchestrator tasks --help)\n";
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "hb-orchestrator: missing command" + hint},
      {{"frobnicate"}, "hb-orchestrator: unknown command 'frobnicate'" + hint},
      {{"tasks", "--bogus=1"}, "hb-orchestrator tasks: unknown flag --bogus=1" + tasks_hint},
      {{"tasks", "--verdicts", "v"},
       "hb-orchestrator tasks: flag --verdicts does not apply to 'tasks'" + tasks_hint},
      {{"tasks", "--dataset"}, "hb-orchestrator tasks: flag --dataset needs a value" + tasks_hint},
      {{"tasks", "--out=a", "--out=b"},
       "hb-orchestrator tasks: flag --out given twice" + tasks_hint},
      // "given twice" is worded the same by every subcommand, whatever the spelling.
      {{"dry-run", "--price_input_per_mtok=1", "--price-input-per-mtok=2"},
       "hb-orchestrator dry-run: flag --price-input-per-mtok given twice (see hb-orchestrator "
       "dry-run --help)\n"},
      {{"run", "--price_input_per_mtok=1", "--price-input-per-mtok=2"},
       "hb-orchestrator run: flag --price-input-per-mtok given twice (see hb-orchestrator run "
       "--help)\n"},
      {{"tasks", "--dataset", d}, "hb-orchestrator tasks: --out is required\n"},
      {{"tasks", "--dataset", d, "--out", dir_ + "/t", "extra"},
       "hb-orchestrator tasks: unexpected argument 'extra'" + tasks_hint},
      {{"tasks", "--dataset", d, "--out", dir_ + "/t", "--examples=0"},
       "hb-orchestrator tasks: --examples must be a positive number (or -1 for all), got 0\n"},
      {{"score", "--dataset", d, "--out", dir_ + "/s"},
       "hb-orchestrator score: --responses is required\n"},
      {{"merge", "--out", dir_ + "/m"},
       "hb-orchestrator merge: merge needs at least one SHARD_DIR\n"},
      {{"merge", "--out", dir_ + "/m", "--responses", "nameless", dir_},
       "hb-orchestrator merge: --responses for merge takes NAME=PATH, got 'nameless'\n"},
  };
  for (const auto& [args, expected] : cases) {
    RunResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << absl::StrJoin(args, " ");
    EXPECT_EQ(r.err, expected) << absl::StrJoin(args, " ");
    EXPECT_EQ(r.out, "");
  }
  RunResult bad_value = RunCli({"tasks", "--examples=abc", "--dataset", d, "--out", dir_ + "/t"});
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_THAT(bad_value.err,
              StartsWith("hb-orchestrator tasks: invalid value 'abc' for --examples"));
}

// dry-run used to accept what run rejects, and wrote "max_tokens":0 bodies.
TEST_F(OrchestratorCliTest, DryRunValidatesGraderSettingsAndPricesLikeRun) {
  const std::string d = examples_ + "/dataset.jsonl";
  const std::string r = examples_ + "/responses.jsonl";
  const std::string out = dir_ + "/requests.jsonl";
  RunResult tokens =
      RunCli({"dry-run", "--dataset", d, "--responses", r, "--out", out, "--grader-template",
              synthetic_template_, "--require-reference-template=false", "--llm-max-tokens=0"});
  EXPECT_EQ(tokens.exit_code, 2);
  EXPECT_EQ(tokens.err, "hb-orchestrator dry-run: --llm-max-tokens must be positive\n");
  RunResult price = RunCli({"dry-run", "--dataset", d, "--responses", r, "--out", out,
                            "--grader-template", synthetic_template_,
                            "--require-reference-template=false", "--price-input-per-mtok=-5"});
  EXPECT_EQ(price.exit_code, 2);
  EXPECT_EQ(price.err, "hb-orchestrator dry-run: --price-* flags must not be negative\n");
  EXPECT_FALSE(std::ifstream(out).good());
  RunResult run = RunCli(
      {"run", "--dataset", d, "--responses", r, "--out", dir_ + "/run", "--llm-max-tokens=0"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.err,
            "hb-orchestrator run: --llm-max-tokens must be positive (see hb-orchestrator run "
            "--help)\n");
  RunResult score = RunCli({"score", "--dataset", d, "--responses", r, "--verdicts",
                            examples_ + "/verdicts.jsonl", "--out", dir_ + "/score",
                            "--grader-template=", "--llm-max-tokens=0"});
  EXPECT_EQ(score.exit_code, 2);
  EXPECT_EQ(score.err, "hb-orchestrator score: --llm-max-tokens must be positive\n");
}

TEST_F(OrchestratorCliTest, BadValueNamesTheFlag) {
  const std::string d = examples_ + "/dataset.jsonl";
  RunResult bad_value = RunCli({"tasks", "--examples=abc", "--dataset", d, "--out", dir_ + "/t"});
  EXPECT_EQ(bad_value.exit_code, 2);
  EXPECT_THAT(bad_value.err,
              StartsWith("hb-orchestrator tasks: invalid value 'abc' for --examples"));
}

// --- tasks --------------------------------------------------------------------------------

TEST_F(OrchestratorCliTest, TasksWritesMessagesAndPromptText) {
  const std::string out = dir_ + "/sub/tasks.jsonl";
  RunResult r = RunCli({"tasks", "--dataset", examples_ + "/dataset.jsonl", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "tasks: wrote 3 tasks to " + out + "\n");
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(examples_ + "/dataset.jsonl", {}));
  std::vector<std::string> lines = Lines(Read(out));
  ASSERT_EQ(lines.size(), 3u);
  for (size_t i = 0; i < lines.size(); ++i) {
    rapidjson::Document doc = ParseJson(lines[i]);
    const Example& example = dataset.examples[i];
    EXPECT_EQ(Str(doc["prompt_id"]), example.prompt_id);
    ASSERT_EQ(doc["messages"].Size(), example.prompt.size());
    for (size_t m = 0; m < example.prompt.size(); ++m) {
      EXPECT_EQ(Str(doc["messages"][m]["role"]), example.prompt[m].role);
      EXPECT_EQ(Str(doc["messages"][m]["content"]), example.prompt[m].content);
    }
    EXPECT_EQ(Str(doc["prompt_text"]), TaskPromptText(example.prompt));
  }
  // The multi-turn task is rendered with the instruction; single-turn ones verbatim.
  EXPECT_EQ(Str(ParseJson(lines[0])["prompt_text"]), dataset.examples[0].prompt[0].content);
  EXPECT_THAT(Str(ParseJson(lines[1])["prompt_text"]),
              StartsWith(std::string(kMultiTurnTaskInstruction) + "user: How much ibuprofen"));
}

TEST_F(OrchestratorCliTest, TasksAppliesTheReferenceExampleSelection) {
  const std::string data = SharedDataFile(kMainHead30);
  const std::string out = dir_ + "/tasks.jsonl";
  RunResult r = RunCli({"tasks", "--dataset", data, "--examples", "5", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(data, {}));
  std::vector<std::string> expected, got;
  for (size_t i : SampleIndices(dataset.examples.size(), 5)) {
    expected.push_back(dataset.examples[i].prompt_id);
  }
  for (const std::string& line : Lines(Read(out))) got.push_back(Str(ParseJson(line)["prompt_id"]));
  EXPECT_THAT(got, ElementsAreArray(expected));
}

// --- dry-run ------------------------------------------------------------------------------

TEST_F(OrchestratorCliTest, DryRunOnTheExampleSkipsTasksWithoutResponseAndEstimatesCost) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(examples_ + "/dataset.jsonl", {}));
  const std::string responses = WriteResponses(dataset, "two.jsonl", {1});
  const std::string out = dir_ + "/requests.jsonl";
  RunResult r =
      RunCli({"dry-run", "--dataset", examples_ + "/dataset.jsonl", "--responses", responses,
              "--grader-template", synthetic_template_, "--require-reference-template=false",
              "--out", out, "--price-input-per-mtok=1000", "--price-output-per-mtok", "3000",
              "--est-output-tokens-per-row=7", "--batch-price-factor=0.4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(Read(out));
  ASSERT_EQ(lines.size(), 8u);
  int64_t tokens = 0;
  for (const std::string& line : lines) {
    rapidjson::Document doc = ParseJson(line);
    const rapidjson::Value& messages = doc["request"]["messages"];
    tokens += static_cast<int64_t>(
        (messages[0]["content"].GetStringLength() + messages[1]["content"].GetStringLength() + 3) /
        4);
  }
  const double cost = static_cast<double>(tokens) / 1e6 * 1000 + 8 * 7 / 1e6 * 3000;
  EXPECT_EQ(r.out,
            absl::StrFormat(
                "dry-run: wrote 8 request rows for 2 of 3 tasks to %s (1 tasks skipped: no "
                "response)\n"
                "estimated input tokens: %d (UTF-8 bytes of the grader messages / 4, per row)\n"
                "estimated output tokens: 56 (7 per row)\n"
                "estimated cost: $%.2f without prompt caching, $%.2f with best-case prompt "
                "caching (0 cached input tokens)\n"
                "estimated cost through the Batch API (run --grader-mode batch, x0.4): $%.2f "
                "without prompt caching, $%.2f with best-case prompt caching\n"
                "prices (USD per million tokens): input 1000.00, cached input 0.50, output "
                "3000.00\n",
                out, tokens, cost, cost, cost * 0.4, cost * 0.4));

  // The reference template is required unless told otherwise.
  RunResult strict = RunCli({"dry-run", "--dataset", examples_ + "/dataset.jsonl", "--responses",
                             responses, "--grader-template", synthetic_template_, "--out", out});
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_THAT(strict.err, StartsWith("hb-orchestrator dry-run: "));
  EXPECT_THAT(strict.err, HasSubstr(std::string("sha256 expected ") + kGraderTemplateSha256));
}

// A Responses grader (a reasoning model) bills reasoning tokens as output: dry-run counts them
// when given, and otherwise says its costs are lower bounds and what 100 per row would add. It
// sends no system message, so none is counted as input.
TEST_F(OrchestratorCliTest, DryRunOfAReasoningGraderSaysWhatItAssumesAboutReasoningTokens) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(examples_ + "/dataset.jsonl", {}));
  const std::string responses = WriteResponses(dataset, "two.jsonl", {1});
  const std::string out = dir_ + "/requests.jsonl";
  const std::vector<std::string> args = {"dry-run",
                                         "--dataset",
                                         examples_ + "/dataset.jsonl",
                                         "--responses",
                                         responses,
                                         "--grader-template",
                                         synthetic_template_,
                                         "--require-reference-template=false",
                                         "--out",
                                         out,
                                         "--llm-model=gpt-5.4-2026-03-05",
                                         "--llm-reasoning-effort=low",
                                         "--price-input-per-mtok=1000",
                                         "--price-cached-input-per-mtok=100",
                                         "--price-output-per-mtok=3000",
                                         "--est-output-tokens-per-row=7"};
  RunResult unknown = RunCli(args);
  ASSERT_EQ(unknown.exit_code, 0) << unknown.err;
  int64_t tokens = 0;
  for (const std::string& line : Lines(Read(out))) {
    rapidjson::Document doc = ParseJson(line);
    ASSERT_FALSE(doc["request"].HasMember("messages"));
    tokens +=
        static_cast<int64_t>((doc["request"]["input"][0]["content"].GetStringLength() + 3) / 4);
  }
  const double input_cost = static_cast<double>(tokens) / 1e6 * 1000;
  EXPECT_EQ(unknown.out,
            absl::StrFormat(
                "dry-run: wrote 8 request rows for 2 of 3 tasks to %s (1 tasks skipped: no "
                "response)\n"
                "estimated input tokens: %d (UTF-8 bytes of the grader messages / 4, per row)\n"
                "estimated output tokens: 56 (7 visible per row; reasoning tokens NOT included: "
                "gpt-5.4-2026-03-05 is called through the Responses API as a reasoning model, "
                "which bills its reasoning tokens as output, and their number is not known "
                "before grading; each 100 per row add $%.2f online. Measure them on a pilot run "
                "(run --examples 20): usage.completion_tokens / rows graded in its summary.json, "
                "minus 7, and pass that as --est-reasoning-tokens-per-row)\n"
                "estimated cost: at least $%.2f without prompt caching, at least $%.2f with "
                "best-case prompt caching (0 cached input tokens)\n"
                "estimated cost through the Batch API (run --grader-mode batch, x0.5): at least "
                "$%.2f without prompt caching, at least $%.2f with best-case prompt caching\n"
                "prices (USD per million tokens): input 1000.00, cached input 100.00, output "
                "3000.00\n",
                out, tokens, 8 * 100 / 1e6 * 3000, input_cost + 56 / 1e6 * 3000,
                input_cost + 56 / 1e6 * 3000, (input_cost + 56 / 1e6 * 3000) * 0.5,
                (input_cost + 56 / 1e6 * 3000) * 0.5));

  std::vector<std::string> given = args;
  given.push_back("--est-reasoning-tokens-per-row=192");
  RunResult known = RunCli(given);
  ASSERT_EQ(known.exit_code, 0) << known.err;
  const double cost = input_cost + 8 * (7 + 192) / 1e6 * 3000;
  EXPECT_THAT(known.out, HasSubstr("estimated output tokens: 1592 (7 visible + 192 reasoning per "
                                   "row, --est-reasoning-tokens-per-row; reasoning tokens are "
                                   "billed as output)\n"));
  EXPECT_THAT(known.out,
              HasSubstr(absl::StrFormat("estimated cost: $%.2f without prompt caching", cost)));
  EXPECT_THAT(known.out, Not(HasSubstr("at least")));

  given.back() = "--est-reasoning-tokens-per-row=-1";
  RunResult negative = RunCli(given);
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_EQ(negative.err,
            "hb-orchestrator dry-run: --est-reasoning-tokens-per-row must not be negative\n");
}

TEST_F(OrchestratorCliTest, DryRunOnTheRealSampleBuildsExactlyTheGraderRequests) {
  const std::string data = SharedDataFile(kMainHead30);
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(data, {}));
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate tmpl, GraderTemplate::Load(ReferenceTemplatePath()));
  const std::string responses = WriteResponses(dataset, "responses.jsonl");
  const std::string out = dir_ + "/requests.jsonl";
  RunResult r = RunCli({"dry-run", "--dataset", data, "--responses", responses, "--grader-template",
                        ReferenceTemplatePath(), "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("dry-run: wrote 352 request rows for 30 of 30 tasks to " + out +
                                " (0 tasks skipped: no response)\n"));
  std::vector<std::string> lines = Lines(Read(out));
  ASSERT_EQ(lines.size(), 352u);
  size_t line = 0;
  const GraderSettings settings;
  for (size_t t = 0; t < dataset.examples.size(); ++t) {
    const Example& example = dataset.examples[t];
    std::optional<std::string> system;
    if (t % 3 == 0) system = "Be careful.";
    std::string reply = absl::StrCat("Synthetic reply ", t, " \xE2\x80\x94 \"quoted\" <b>x</b>\n",
                                     t == 5 ? "see <<rubric_item>> here" : "line two");
    const std::string conversation =
        RenderConversation(GradedConversation(example.prompt, system, reply));
    for (size_t i = 0; i < example.rubrics.size(); ++i, ++line) {
      ASSERT_LT(line, lines.size());
      rapidjson::Document doc = ParseJson(lines[line]);
      EXPECT_EQ(Str(doc["prompt_id"]), example.prompt_id);
      EXPECT_EQ(doc["rubric_index"].GetUint64(), i);
      const std::string expected_prompt =
          tmpl.Fill(conversation, RenderRubricItem(example.rubrics[i]));
      const rapidjson::Value& messages = doc["request"]["messages"];
      ASSERT_EQ(messages.Size(), 2u);
      EXPECT_EQ(Str(messages[0]["role"]), "system");
      EXPECT_EQ(Str(messages[0]["content"]), "You are a helpful assistant.");
      EXPECT_EQ(Str(messages[1]["role"]), "user");
      EXPECT_EQ(Str(messages[1]["content"]), expected_prompt) << example.prompt_id << " " << i;
      EXPECT_EQ(Str(doc["request"]["model"]), "gpt-4.1-2025-04-14");
      EXPECT_EQ(doc["request"]["temperature"].GetDouble(), 0.5);
      EXPECT_EQ(doc["request"]["max_tokens"].GetInt(), 2048);
      // The "request" value is the body's exact bytes: hashing it gives request_sha256, and
      // it is what BuildChatCompletionBody makes for the same prompt.
      const std::string marker = ",\"request\":";
      size_t at = lines[line].find(marker);
      ASSERT_NE(at, std::string::npos);
      const std::string raw =
          lines[line].substr(at + marker.size(), lines[line].size() - at - marker.size() - 1);
      EXPECT_EQ(Sha256Hex(raw), Str(doc["request_sha256"]));
      EXPECT_EQ(raw, BuildChatCompletionBody(settings, expected_prompt));
    }
  }
  EXPECT_EQ(line, 352u);
}

// --- score --------------------------------------------------------------------------------

TEST_F(OrchestratorCliTest, ScoreOnTheExample) {
  const std::string out = dir_ + "/report";
  RunResult r = RunCli({"score", "--dataset", examples_ + "/dataset.jsonl", "--responses",
                        examples_ + "/responses.jsonl", "--verdicts", examples_ + "/verdicts.jsonl",
                        "--grader-template", synthetic_template_,
                        "--require-reference-template=false", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double expected = (15.0 / 18 + 9.0 / 13 + 15.0 / 15) / 3;
  EXPECT_THAT(r.out, StartsWith(absl::StrFormat("score: responses: %.4f", expected)));
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  EXPECT_EQ(Num(summary["score"]), expected);
  EXPECT_EQ(summary["counts"]["graded"].GetInt(), 3);
  EXPECT_EQ(summary["counts"]["rows"].GetInt(), 12);
  EXPECT_EQ(Str(summary["provenance"]["grader_template_sha256"]),
            Sha256Hex(Read(synthetic_template_)));
  std::vector<std::string> tasks = Lines(Read(out + "/tasks.jsonl"));
  ASSERT_EQ(tasks.size(), 3u);
  EXPECT_EQ(Num(ParseJson(tasks[0])["score"]), 15.0 / 18);
  EXPECT_EQ(Num(ParseJson(tasks[1])["score"]), 9.0 / 13);
  EXPECT_EQ(Num(ParseJson(tasks[2])["score"]), 1.0);
  // verdicts.jsonl re-scores to the same reports.
  RunResult again = RunCli(
      {"score", "--dataset", examples_ + "/dataset.jsonl", "--responses",
       examples_ + "/responses.jsonl", "--verdicts", out + "/verdicts.jsonl", "--grader-template",
       synthetic_template_, "--require-reference-template=false", "--out", dir_ + "/again"},
      {"HB_FIXED_TIME=x"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Read(out + "/tasks.jsonl"), Read(dir_ + "/again/tasks.jsonl"));
}

// simple-evals PR #108's length adjustment: per task in tasks.jsonl (right after overall_score),
// aggregated with n_samples and bootstrap std in summary.json, recorded in the provenance; the
// two flags go together.
TEST_F(OrchestratorCliTest, ScoreWithLengthAdjustment) {
  const std::string out = dir_ + "/adjusted";
  std::vector<std::string> args = {"score",
                                   "--dataset",
                                   examples_ + "/dataset.jsonl",
                                   "--responses",
                                   examples_ + "/responses.jsonl",
                                   "--verdicts",
                                   examples_ + "/verdicts.jsonl",
                                   "--grader-template",
                                   synthetic_template_,
                                   "--require-reference-template=false",
                                   "--out",
                                   out,
                                   "--length-adjustment-center=100"};
  RunResult half = RunCli(args);
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_THAT(half.err, HasSubstr("add --length-adjustment-penalty-per-500-chars"));
  args.push_back("--length-adjustment-penalty-per-500-chars=0.0147");
  RunResult r = RunCli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double sum = 0;
  const std::vector<std::string> tasks = Lines(Read(out + "/tasks.jsonl"));
  ASSERT_EQ(tasks.size(), 3u);
  for (const std::string& line : tasks) {
    rapidjson::Document task = ParseJson(line);
    const rapidjson::Value& metrics = task["metrics"];
    auto second = metrics.MemberBegin() + 1;
    EXPECT_EQ(Str(second->name), "overall_score_length_adjusted");
    const double expected =
        Num(task["score"]) -
        0.0147 * ((static_cast<double>(PythonStrLen(Str(task["response"]))) - 100) / 500.0);
    EXPECT_EQ(Num(second->value), expected) << line;
    sum += expected;
  }
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  const rapidjson::Value& metrics = summary["metrics"];
  EXPECT_DOUBLE_EQ(Num(metrics["overall_score_length_adjusted"]),
                   std::min(1.0, std::max(0.0, sum / 3)));
  EXPECT_EQ(metrics["overall_score_length_adjusted:n_samples"].GetInt(), 3);
  EXPECT_TRUE(metrics["overall_score_length_adjusted:bootstrap_std"].IsNumber());
  EXPECT_EQ(Num(summary["provenance"]["length_adjustment"]["center"]), 100.0);
  EXPECT_EQ(Num(summary["provenance"]["length_adjustment"]["penalty_per_500_chars"]), 0.0147);
  EXPECT_THAT(Read(out + "/report.html"), HasSubstr("overall_score_length_adjusted"));
  // The adjusted score is the headline (summary.json's score, report.html's, the stdout line),
  // the raw score beside it.
  const double adjusted = Num(metrics["overall_score_length_adjusted"]);
  const double raw = Num(metrics["overall_score"]);
  EXPECT_NE(adjusted, raw);
  EXPECT_EQ(Num(summary["score"]), adjusted);
  EXPECT_EQ(Num(summary["raw_score"]), raw);
  EXPECT_TRUE(summary["score_length_adjusted"].GetBool());
  EXPECT_THAT(r.out, HasSubstr(absl::StrFormat(
                         "score: responses: %.4f length-adjusted (bootstrap std %.4f; raw %.4f, "
                         "bootstrap std %.4f); 3 of 3 tasks graded",
                         adjusted, Num(metrics["overall_score_length_adjusted:bootstrap_std"]), raw,
                         Num(metrics["score:bootstrap_std"]))));
  EXPECT_THAT(Read(out + "/report.html"),
              HasSubstr(absl::StrFormat("Score (length-adjusted): <b>%.3f</b>", adjusted)));
  EXPECT_THAT(Read(out + "/report.html"), HasSubstr(absl::StrFormat("; raw score %.3f", raw)));
}

// `score` of a checkpoint folder keeps what graded its verdicts (the summary.json beside them):
// the grader identity and the length adjustment, never the flags' defaults (gpt-4.1 chat); a
// grader flag that contradicts it is refused. `score --professional` takes the bundle.
TEST_F(OrchestratorCliTest, ScoreKeepsTheGradingOfItsVerdicts) {
  const std::string dataset =
      SourceDir() + "/tests/common/healthbench/testdata/professional_synthetic.jsonl";
  const std::string responses = dir_ + "/pro.jsonl";
  Write(responses,
        "{\"prompt_id\":\"pro-001\",\"response\":\"Depends on CrCl.\"}\n"
        "{\"prompt_id\":\"2\",\"response\":\"Troponin negative, aspirin.\"}\n"
        "{\"prompt_id\":\"pro-003\",\"response\":\"4 g par jour maximum.\"}\n");
  HB_ASSERT_OK_AND_ASSIGN(Dataset pro, LoadDataset(dataset, {}));
  std::string verdicts;
  for (size_t t = 0; t < pro.examples.size(); ++t) {
    for (size_t i = 0; i < pro.examples[t].rubrics.size(); ++i) {
      verdicts += VerdictLine(pro.examples[t].prompt_id, i, MetA(t, i));
    }
  }
  Write(dir_ + "/pro.verdicts.jsonl", verdicts);
  const auto score = [&](const std::string& verdicts_path, const std::string& out,
                         std::vector<std::string> extra) {
    std::vector<std::string> args = {"score",
                                     "--dataset",
                                     dataset,
                                     "--responses",
                                     responses,
                                     "--verdicts",
                                     verdicts_path,
                                     "--out",
                                     out,
                                     "--grader-template",
                                     ReferenceTemplatePath()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  };
  const RunResult first = score(dir_ + "/pro.verdicts.jsonl", dir_ + "/graded", {"--professional"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (const std::string& out : {dir_ + "/graded", dir_ + "/rescored"}) {
    if (out == dir_ + "/rescored") {
      const RunResult again = RunCli({"score", "--dataset", dataset, "--responses", responses,
                                      "--verdicts", dir_ + "/graded/verdicts.jsonl", "--out", out});
      ASSERT_EQ(again.exit_code, 0) << again.err;
      EXPECT_THAT(again.out, HasSubstr("length-adjusted"));
    }
    SCOPED_TRACE(out);
    rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
    const rapidjson::Value& grader = summary["provenance"]["grader"];
    EXPECT_EQ(Str(grader["model"]), "gpt-5.4-2026-03-05");
    EXPECT_EQ(Str(grader["api"]), "responses");
    EXPECT_EQ(Str(grader["reasoning_effort"]), "low");
    EXPECT_EQ(Num(summary["provenance"]["length_adjustment"]["center"]), 2000.0);
    EXPECT_EQ(Str(summary["provenance"]["grader_template_sha256"]), kGraderTemplateSha256);
    EXPECT_TRUE(summary["score_length_adjusted"].GetBool());
    EXPECT_EQ(Num(summary["score"]), Num(summary["metrics"]["overall_score_length_adjusted"]));
  }
  const RunResult contradicted =
      score(dir_ + "/graded/verdicts.jsonl", dir_ + "/o", {"--llm-model=gpt-4.1-2025-04-14"});
  EXPECT_EQ(contradicted.exit_code, 2);
  EXPECT_THAT(
      contradicted.err,
      HasSubstr("hb-orchestrator score: the grader flags contradict the grading of " + dir_ +
                "/graded/verdicts.jsonl (" + dir_ + "/graded/summary.json): grader "));
  EXPECT_THAT(contradicted.err, HasSubstr("drop them to keep what graded these verdicts"));
}

TEST_F(OrchestratorCliTest, ScoreRefusesVerdictsOfOtherResponses) {
  const std::string r = examples_ + "/responses.jsonl";
  auto score = [&](const std::string& responses, const std::string& verdicts,
                   const std::string& out) {
    return RunCli({"score", "--dataset", examples_ + "/dataset.jsonl", "--responses", responses,
                   "--verdicts", verdicts, "--out", dir_ + "/" + out, "--grader-template",
                   synthetic_template_, "--require-reference-template=false"});
  };
  // The example's verdicts predate headers: they load, with a warning.
  RunResult first = score(r, examples_ + "/verdicts.jsonl", "first");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.err, HasSubstr(examples_ + "/verdicts.jsonl has no verdicts_header line"));
  const std::string verdicts = dir_ + "/first/verdicts.jsonl";
  EXPECT_THAT(Lines(Read(verdicts))[0],
              StartsWith("{\"verdicts_header\":{\"checkpoint\":\"responses\","
                         "\"responses_sha256\":\"" +
                         Sha256Hex(Read(r)) + "\""));

  // The written verdicts name their responses: others (same answers, other bytes) are refused.
  const std::string other = dir_ + "/other.jsonl";
  Write(other, absl::StrReplaceAll(Read(r), {{"\"response\": ", "\"response\":  "}}));
  RunResult refused = score(other, verdicts, "mixed");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err,
            absl::StrCat("hb-orchestrator score: ", verdicts, " grades responses with sha256 ",
                         Sha256Hex(Read(r)), " (checkpoint 'responses'), but ", other,
                         " has sha256 ", Sha256Hex(Read(other)),
                         ": pass the responses file that run graded (its "
                         "summary.json names it under provenance.responses), or "
                         "grade these responses\n"));

  // With its own responses they re-score, without a warning.
  RunResult again = score(r, verdicts, "again");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.err, Not(HasSubstr("verdicts_header")));
}

// Per-task metrics computed here from SPEC §7-§8, independently of hb::ScoreTask.
std::vector<std::pair<std::string, double>> ExpectedTaskMetrics(const Example& example,
                                                                const std::vector<bool>& met) {
  double achieved = 0, possible = 0;
  for (size_t i = 0; i < example.rubrics.size(); ++i) {
    if (example.rubrics[i].points > 0) possible += example.rubrics[i].points;
    if (met[i]) achieved += example.rubrics[i].points;
  }
  const double overall = achieved / possible;
  std::vector<std::pair<std::string, double>> metrics = {{"overall_score", overall}};
  for (const std::string& tag : example.example_tags) metrics.push_back({tag, overall});
  std::vector<std::string> rubric_tags;
  for (const RubricItem& item : example.rubrics) {
    for (const std::string& tag : item.tags) {
      if (std::find(rubric_tags.begin(), rubric_tags.end(), tag) == rubric_tags.end()) {
        rubric_tags.push_back(tag);
      }
    }
  }
  for (const std::string& tag : rubric_tags) {
    double a = 0, p = 0;
    for (size_t i = 0; i < example.rubrics.size(); ++i) {
      const RubricItem& item = example.rubrics[i];
      if (std::find(item.tags.begin(), item.tags.end(), tag) == item.tags.end()) continue;
      if (item.points > 0) p += item.points;
      if (met[i]) a += item.points;
    }
    if (p > 0) metrics.push_back({tag, a / p});
  }
  return metrics;
}

TEST_F(OrchestratorCliTest, ScoreOnTheRealSampleReproducesTheReferenceAggregation) {
  const std::string data = SharedDataFile(kMainHead30);
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(data, {}));
  const std::vector<size_t> no_response = {4, 17};
  const std::string responses = WriteResponses(dataset, "responses.jsonl", no_response);
  std::string verdicts;
  std::string reference_tasks;  // aggregate_reference.py input: graded tasks' metrics
  std::vector<std::vector<std::pair<std::string, double>>> expected(dataset.examples.size());
  for (size_t t = 0; t < dataset.examples.size(); ++t) {
    const Example& example = dataset.examples[t];
    if (std::find(no_response.begin(), no_response.end(), t) != no_response.end()) continue;
    std::vector<bool> met;
    for (size_t i = 0; i < example.rubrics.size(); ++i) {
      met.push_back(MetA(t, i));
      absl::StrAppend(&verdicts, VerdictLine(example.prompt_id, i, met.back()));
    }
    expected[t] = ExpectedTaskMetrics(example, met);
    std::vector<std::string> pairs;
    for (const auto& [key, value] : expected[t]) {
      pairs.push_back(absl::StrCat("[", JsonQuote(key), ",", PythonFloatRepr(value), "]"));
    }
    absl::StrAppend(&reference_tasks, reference_tasks.empty() ? "" : ",", "[",
                    absl::StrJoin(pairs, ","), "]");
  }
  Write(dir_ + "/verdicts.jsonl", verdicts);
  const std::string out = dir_ + "/report";
  RunResult r = RunCli({"score", "--dataset", data, "--responses", responses, "--verdicts",
                        dir_ + "/verdicts.jsonl", "--grader-template", ReferenceTemplatePath(),
                        "--seed", "7", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  // Per task: scores and metrics (keys in order, values bit for bit).
  std::vector<std::string> tasks = Lines(Read(out + "/tasks.jsonl"));
  ASSERT_EQ(tasks.size(), 30u);
  for (size_t t = 0; t < tasks.size(); ++t) {
    rapidjson::Document doc = ParseJson(tasks[t]);
    if (expected[t].empty()) {
      EXPECT_TRUE(doc["score"].IsNull());
      EXPECT_EQ(Str(doc["error"]), "no response");
      continue;
    }
    EXPECT_EQ(Num(doc["score"]), expected[t][0].second) << t;
    std::vector<std::pair<std::string, double>> got;
    for (const auto& m : doc["metrics"].GetObject())
      got.push_back({m.name.GetString(), Num(m.value)});
    EXPECT_EQ(got, expected[t]) << t;
  }

  // Aggregates: against scripts/reference/aggregate_reference.py (numpy, seed 7).
  Write(dir_ + "/in.json",
        absl::StrCat(R"({"cases":[{"seed":7,"samples":1000,"tasks":[)", reference_tasks, "]}]}"));
  const std::string command =
      absl::StrCat("/usr/bin/python3 ", SourceDir(), "/scripts/reference/aggregate_reference.py ",
                   dir_, "/in.json ", dir_, "/out.json");
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  rapidjson::Document reference = ParseJson(Read(dir_ + "/out.json"));
  const rapidjson::Value& ref = reference["cases"][0];
  rapidjson::Document summary = ParseJson(Read(out + "/summary.json"));
  EXPECT_EQ(Num(summary["score"]), std::strtod(ref["score"].GetString(), nullptr));
  std::vector<std::pair<std::string, double>> want, got;
  for (const auto& pair : ref["metrics"].GetArray()) {
    want.push_back({Str(pair[0]), std::strtod(pair[1].GetString(), nullptr)});
  }
  for (const auto& m : summary["metrics"].GetObject())
    got.push_back({m.name.GetString(), Num(m.value)});
  EXPECT_EQ(got, want);
  EXPECT_EQ(summary["counts"]["graded"].GetInt(), 28);
  EXPECT_EQ(summary["counts"]["not_graded"].GetInt(), 2);
  EXPECT_EQ(summary["provenance"]["seed"].GetInt(), 7);
}

// --- merge --------------------------------------------------------------------------------

class MergeTest : public OrchestratorCliTest {
 protected:
  void SetUp() override {
    OrchestratorCliTest::SetUp();
    data_ = SharedDataFile(kMainHead30);
    auto dataset = LoadDataset(data_, {});
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    dataset_ = *std::move(dataset);
    responses_["a_base"] = WriteResponses(dataset_, "a_base.jsonl", {2});
    responses_["b_new"] = WriteResponses(dataset_, "b_new.jsonl", {9});
    // Shard k grades the tasks with index % 2 == k; the unsharded run grades all. b_new has
    // a failed row in shard 1 (task 3, row 0), and task 2 / 9 have no response.
    for (const std::string ckpt : {"a_base", "b_new"}) {
      std::string all, shard[2], failures;
      for (size_t t = 0; t < dataset_.examples.size(); ++t) {
        if ((ckpt == "a_base" && t == 2) || (ckpt == "b_new" && t == 9)) continue;
        const Example& example = dataset_.examples[t];
        for (size_t i = 0; i < example.rubrics.size(); ++i) {
          if (ckpt == "b_new" && t == 3 && i == 0) {
            failures = absl::StrCat("{\"prompt_id\":", JsonQuote(example.prompt_id),
                                    ",\"rubric_index\":0,\"reason\":\"retry budget exhausted\"}\n");
            continue;
          }
          std::string line =
              VerdictLine(example.prompt_id, i, ckpt == "a_base" ? MetA(t, i) : MetB(t, i));
          all += line;
          shard[t % 2] += line;
        }
      }
      Write(dir_ + "/" + ckpt + ".all.jsonl", all);
      Write(dir_ + "/" + ckpt + ".shard0.jsonl", shard[0]);
      Write(dir_ + "/" + ckpt + ".shard1.jsonl", shard[1]);
      Write(dir_ + "/" + ckpt + ".failures.jsonl", failures);
    }
  }

  // `score` one checkpoint into <out_root>/<ckpt>.
  RunResult Score(const std::string& ckpt, const std::string& verdicts, const std::string& failures,
                  const std::string& out_root, const std::string& seed = "0",
                  const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"score",
                                     "--dataset",
                                     data_,
                                     "--responses",
                                     responses_[ckpt],
                                     "--verdicts",
                                     verdicts,
                                     "--checkpoint",
                                     ckpt,
                                     "--grader-template",
                                     ReferenceTemplatePath(),
                                     "--seed",
                                     seed,
                                     "--out",
                                     out_root + "/" + ckpt};
    if (!failures.empty()) {
      args.push_back("--failures");
      args.push_back(failures);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args, {"HB_FIXED_TIME=2026-01-01T00:00:00Z"});
  }

  std::string data_;
  Dataset dataset_;
  std::map<std::string, std::string> responses_;
};

TEST_F(MergeTest, ShardsMergeToTheUnshardedReportsByteForByte) {
  for (const std::string ckpt : {"a_base", "b_new"}) {
    const std::string failures = dir_ + "/" + ckpt + ".failures.jsonl";
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".all.jsonl", failures, dir_ + "/full").exit_code, 0);
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".shard0.jsonl", "", dir_ + "/shard0").exit_code, 0);
    RunResult s1 = Score(ckpt, dir_ + "/" + ckpt + ".shard1.jsonl", failures, dir_ + "/shard1");
    ASSERT_EQ(s1.exit_code, 0) << s1.err;
  }
  // A shard on its own is incomplete.
  EXPECT_TRUE(
      ParseJson(Read(dir_ + "/shard0/a_base/summary.json"))["provenance"]["incomplete"].GetBool());

  const std::vector<std::string> env = {"HB_FIXED_TIME=2026-01-01T00:00:00Z"};
  RunResult merged =
      RunCli({"merge", "--out", dir_ + "/merged", dir_ + "/shard0", dir_ + "/shard1"}, env);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_THAT(merged.out, HasSubstr("merge: a_base: 2 shards, 29 of 30 tasks graded"));
  EXPECT_THAT(merged.out, HasSubstr("merge: b_new: 2 shards, 28 of 30 tasks graded"));
  for (const std::string ckpt : {"a_base", "b_new"}) {
    for (const char* file : {"tasks.jsonl", "verdicts.jsonl", "failures.jsonl", "report.html"}) {
      EXPECT_EQ(Read(dir_ + "/merged/" + ckpt + "/" + file),
                Read(dir_ + "/full/" + ckpt + "/" + file))
          << ckpt << "/" << file;
    }
    // The same summary, plus the shards it was merged from.
    EXPECT_EQ(SummaryWithoutShards(Read(dir_ + "/merged/" + ckpt + "/summary.json")),
              SummaryWithoutShards(Read(dir_ + "/full/" + ckpt + "/summary.json")));
  }
  rapidjson::Document summary = ParseJson(Read(dir_ + "/merged/b_new/summary.json"));
  EXPECT_FALSE(summary["provenance"]["incomplete"].GetBool());
  const rapidjson::Value& shards = summary["provenance"]["shards"];
  ASSERT_TRUE(shards.IsArray());
  ASSERT_EQ(shards.Size(), 2u);
  EXPECT_EQ(Str(shards[0]), dir_ + "/shard0");
  EXPECT_EQ(Str(shards[1]), dir_ + "/shard1");
  EXPECT_EQ(summary["counts"]["failed_rows"].GetInt(), 1);

  // The comparison of the merge equals the comparison of the unsharded outputs.
  RunResult from_full = RunCli({"merge", "--out", dir_ + "/merged_full", dir_ + "/full"}, env);
  ASSERT_EQ(from_full.exit_code, 0) << from_full.err;
  const std::string comparison = Read(dir_ + "/merged/comparison.json");
  EXPECT_EQ(comparison, Read(dir_ + "/merged_full/comparison.json"));
  rapidjson::Document cmp = ParseJson(comparison);
  EXPECT_EQ(Str(cmp["baseline"]), "a_base");
  // Tasks graded in both: all but 2 (a_base: no response), 9 (b_new: no response) and 3 (b_new:
  // failed row).
  EXPECT_EQ(cmp["differences"][0]["n"].GetInt(), 27);
  EXPECT_THAT(Read(dir_ + "/merged/comparison.html"), HasSubstr("a_base/report.html"));
}

// simple-evals PR #108's length-adjusted score survives merge (the merged report is the
// unsharded one, overall_score_length_adjusted with its n and bootstrap std included) and is
// shown by compare; shards adjusted differently are refused.
TEST_F(MergeTest, LengthAdjustedScoresMergeAndCompare) {
  const std::vector<std::string> adjust = {"--length-adjustment-center=10",
                                           "--length-adjustment-penalty-per-500-chars=0.5"};
  for (const std::string ckpt : {"a_base", "b_new"}) {
    const std::string failures = dir_ + "/" + ckpt + ".failures.jsonl";
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".all.jsonl", failures, dir_ + "/full", "0", adjust)
                  .exit_code,
              0);
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".shard0.jsonl", "", dir_ + "/shard0", "0", adjust)
                  .exit_code,
              0);
    ASSERT_EQ(
        Score(ckpt, dir_ + "/" + ckpt + ".shard1.jsonl", failures, dir_ + "/shard1", "0", adjust)
            .exit_code,
        0);
  }
  const std::vector<std::string> env = {"HB_FIXED_TIME=2026-01-01T00:00:00Z"};
  RunResult merged =
      RunCli({"merge", "--out", dir_ + "/merged", dir_ + "/shard0", dir_ + "/shard1"}, env);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_THAT(merged.out, ContainsRegex("merge: b_new: 2 shards, .*; score [0-9.]+ "
                                        "length-adjusted \\(bootstrap std [0-9.]+; raw "));
  for (const std::string ckpt : {"a_base", "b_new"}) {
    for (const char* file : {"tasks.jsonl", "report.html"}) {
      EXPECT_EQ(Read(dir_ + "/merged/" + ckpt + "/" + file),
                Read(dir_ + "/full/" + ckpt + "/" + file))
          << ckpt << "/" << file;
    }
    EXPECT_EQ(SummaryWithoutShards(Read(dir_ + "/merged/" + ckpt + "/summary.json")),
              SummaryWithoutShards(Read(dir_ + "/full/" + ckpt + "/summary.json")));
  }
  rapidjson::Document full = ParseJson(Read(dir_ + "/full/b_new/summary.json"));
  const rapidjson::Value& metrics = full["metrics"];
  ASSERT_TRUE(metrics.HasMember("overall_score_length_adjusted"));
  const double adjusted = Num(metrics["overall_score_length_adjusted"]);
  const int n = metrics["overall_score_length_adjusted:n_samples"].GetInt();
  const double std = Num(metrics["overall_score_length_adjusted:bootstrap_std"]);
  EXPECT_EQ(n, 28);

  // compare shows it beside the score (JSON, page and message).
  RunResult compared = RunCli(
      {"compare", "--out", dir_ + "/cmp", dir_ + "/merged/a_base", dir_ + "/merged/b_new"}, env);
  ASSERT_EQ(compared.exit_code, 0) << compared.err;
  EXPECT_EQ(Num(full["score"]), adjusted);  // the headline
  const double raw = Num(full["raw_score"]);
  EXPECT_THAT(compared.out,
              HasSubstr(absl::StrFormat("compare: b_new: score %.4f length-adjusted (bootstrap "
                                        "std %.4f; raw %.4f, bootstrap std %.4f), 28 of 30 tasks "
                                        "graded",
                                        adjusted, std, raw, Num(metrics["score:bootstrap_std"]))));
  rapidjson::Document cmp = ParseJson(Read(dir_ + "/cmp/comparison.json"));
  const rapidjson::Value& b_new = cmp["checkpoints"][1];
  EXPECT_EQ(Str(b_new["checkpoint"]), "b_new");
  EXPECT_EQ(Num(b_new["overall_score_length_adjusted"]["mean"]), adjusted);
  EXPECT_EQ(b_new["overall_score_length_adjusted"]["n_samples"].GetInt(), n);
  EXPECT_EQ(Num(b_new["overall_score_length_adjusted"]["bootstrap_std"]), std);
  // The paired difference is of the adjusted scores, the raw one beside it: the adjusted task
  // scores' mean difference over the tasks both graded.
  const rapidjson::Value& difference = cmp["differences"][0];
  EXPECT_TRUE(difference["length_adjusted"].GetBool());
  std::map<std::string, double> base_adjusted, new_adjusted;
  for (const auto& [ckpt, scores] :
       {std::pair<std::string, std::map<std::string, double>*>{"a_base", &base_adjusted},
        {"b_new", &new_adjusted}}) {
    for (const std::string& line : Lines(Read(dir_ + "/merged/" + ckpt + "/tasks.jsonl"))) {
      rapidjson::Document task = ParseJson(line);
      if (task["score"].IsNumber()) {
        (*scores)[Str(task["prompt_id"])] = Num(task["metrics"]["overall_score_length_adjusted"]);
      }
    }
  }
  double sum = 0;
  int both = 0;
  for (const auto& [id, value] : base_adjusted) {
    if (new_adjusted.count(id) == 0) continue;
    sum += new_adjusted[id] - value;
    ++both;
  }
  EXPECT_EQ(difference["n"].GetInt(), both);
  EXPECT_NEAR(Num(difference["difference"]), sum / both, 1e-12);
  EXPECT_TRUE(difference["raw"]["difference"].IsNumber());
  EXPECT_NE(Num(difference["raw"]["difference"]), Num(difference["difference"]));
  EXPECT_THAT(Read(dir_ + "/cmp/comparison.html"), HasSubstr(" (length-adjusted)</td>"));
  const std::string page = Read(dir_ + "/cmp/comparison.html");
  EXPECT_THAT(page, HasSubstr("<th>length-adjusted</th><th>its bootstrap std</th>"));
  EXPECT_THAT(page, HasSubstr(absl::StrFormat("<td class=\"num\">%.3f</td><td class=\"num\">"
                                              "%.3f</td>",
                                              adjusted, std)));
  // A checkpoint scored without it says so beside one with it; its JSON has no such key.
  ASSERT_EQ(
      Score("a_base", dir_ + "/a_base.all.jsonl", dir_ + "/a_base.failures.jsonl", dir_ + "/plain")
          .exit_code,
      0);
  RunResult mixed = RunCli(
      {"compare", "--out", dir_ + "/cmp-mixed", dir_ + "/plain/a_base", dir_ + "/merged/b_new"},
      env);
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_THAT(Read(dir_ + "/cmp-mixed/comparison.html"),
              HasSubstr("<td class=\"num\">not applied</td>"));
  rapidjson::Document mixed_json = ParseJson(Read(dir_ + "/cmp-mixed/comparison.json"));
  EXPECT_FALSE(mixed_json["checkpoints"][0].HasMember("overall_score_length_adjusted"));
  EXPECT_TRUE(mixed_json["checkpoints"][1].HasMember("overall_score_length_adjusted"));

  // A shard adjusted with another center does not merge with the others.
  ASSERT_EQ(
      Score("a_base", dir_ + "/a_base.shard1.jsonl", "", dir_ + "/shard1-other", "0",
            {"--length-adjustment-center=11", "--length-adjustment-penalty-per-500-chars=0.5"})
          .exit_code,
      0);
  RunResult refused =
      RunCli({"merge", "--out", dir_ + "/refused", dir_ + "/shard0", dir_ + "/shard1-other"}, env);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err,
              HasSubstr("disagrees with shard '" + dir_ +
                        "/shard0' on length adjustment "
                        "('center 10.0, penalty 0.5 per 500 chars' vs 'center 11.0, penalty 0.5 "
                        "per 500 chars')"));
}

// summary.json records the whole grader identity (API, effort, extra body, headers by name and
// value sha256, never a value); merge carries it, and compare refuses another judge naming the
// field.
TEST_F(MergeTest, TheGradersIdentitySurvivesMergeAndSeparatesJudgesInCompare) {
  const std::vector<std::string> judge = {
      "--llm-model=gpt-5.4-2026-03-05", "--llm-reasoning-effort=low",
      R"(--llm-extra-body={"service_tier":"flex"})", "--llm-header=api-key=SECRET-value"};
  ASSERT_EQ(Score("a_base", dir_ + "/a_base.all.jsonl", "", dir_ + "/judge", "0", judge).exit_code,
            0);
  ASSERT_EQ(Score("b_new", dir_ + "/b_new.all.jsonl", "", dir_ + "/plain").exit_code, 0);
  const std::vector<std::string> env = {"HB_FIXED_TIME=2026-01-01T00:00:00Z"};
  RunResult merged = RunCli({"merge", "--out", dir_ + "/merged", dir_ + "/judge"}, env);
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  const std::string text = Read(dir_ + "/merged/a_base/summary.json");
  EXPECT_THAT(text, Not(HasSubstr("SECRET")));
  rapidjson::Document summary = ParseJson(text);
  const rapidjson::Value& grader = summary["provenance"]["grader"];
  EXPECT_EQ(Str(grader["api"]), "responses");
  EXPECT_EQ(Str(grader["reasoning_effort"]), "low");
  EXPECT_EQ(Str(grader["extra_body"]["service_tier"]), "flex");
  ASSERT_EQ(grader["headers"].Size(), 1u);
  EXPECT_EQ(Str(grader["headers"][0]["name"]), "api-key");
  EXPECT_EQ(Str(grader["headers"][0]["value"]), "[redacted]");
  EXPECT_EQ(Str(grader["headers"][0]["value_sha256"]), Sha256Hex("SECRET-value"));

  RunResult compared =
      RunCli({"compare", "--out", dir_ + "/cmp", dir_ + "/merged/a_base", dir_ + "/plain/b_new"});
  EXPECT_EQ(compared.exit_code, 2);
  EXPECT_THAT(compared.err,
              HasSubstr("was graded differently from the baseline 'a_base': grader model "
                        "('gpt-5.4-2026-03-05' vs 'gpt-4.1-2025-04-14')"));
  // The same judge with another gateway key is another judge.
  ASSERT_EQ(Score("b_new", dir_ + "/b_new.all.jsonl", "", dir_ + "/other-key", "0",
                  {judge[0], judge[1], judge[2], "--llm-header=api-key=OTHER"})
                .exit_code,
            0);
  RunResult other = RunCli(
      {"compare", "--out", dir_ + "/cmp2", dir_ + "/merged/a_base", dir_ + "/other-key/b_new"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("grader headers ('api-key:" + Sha256Hex("SECRET-value") +
                                   "' vs 'api-key:" + Sha256Hex("OTHER") + "')"));
}

TEST_F(MergeTest, RejectsShardsThatDisagreeOrOverlap) {
  ASSERT_EQ(Score("a_base", dir_ + "/a_base.shard0.jsonl", "", dir_ + "/shard0").exit_code, 0);
  ASSERT_EQ(Score("a_base", dir_ + "/a_base.shard1.jsonl", "", dir_ + "/seed5", "5").exit_code, 0);
  RunResult seed = RunCli({"merge", "--out", dir_ + "/m", dir_ + "/shard0", dir_ + "/seed5"});
  EXPECT_EQ(seed.exit_code, 2);
  EXPECT_EQ(seed.err, "hb-orchestrator merge: checkpoint 'a_base': shard '" + dir_ +
                          "/seed5' disagrees with shard '" + dir_ +
                          "/shard0' on seed ('0' vs '5')\n");

  RunResult overlap = RunCli({"merge", "--out", dir_ + "/m", dir_ + "/shard0", dir_ + "/shard0"});
  EXPECT_EQ(overlap.exit_code, 2);
  EXPECT_EQ(overlap.err,
            "hb-orchestrator merge: checkpoint 'a_base': duplicate verdict (prompt_id '" +
                dataset_.examples[0].prompt_id + "', rubric_index 0)\n");

  // Responses changed since grading: the recorded sha256 no longer matches.
  RunResult changed = RunCli({"merge", "--out", dir_ + "/m", "--responses",
                              "a_base=" + responses_["b_new"], dir_ + "/shard0"});
  EXPECT_EQ(changed.exit_code, 2);
  EXPECT_THAT(changed.err, StartsWith("hb-orchestrator merge: checkpoint 'a_base': responses '" +
                                      responses_["b_new"] + "' have sha256 "));
  RunResult unknown =
      RunCli({"merge", "--out", dir_ + "/m", "--responses", "zzz=x", dir_ + "/shard0"});
  EXPECT_EQ(unknown.err,
            "hb-orchestrator merge: --responses names checkpoint 'zzz', which no shard has\n");
  RunResult empty = RunCli({"merge", "--out", dir_ + "/m", dir_});
  EXPECT_EQ(empty.err,
            "hb-orchestrator merge: shard '" + dir_ + "' has no <checkpoint>/summary.json\n");
}

// Marks the checkpoint folder `dir` as shard `index` of `count`, as `run --shard-index
// --shard-count` records it (`score` records no shard).
void RecordShard(const std::string& dir, int index, int count) {
  std::string text = Read(dir + "/summary.json");
  const std::string none = "\"shard\": null";
  const size_t at = text.find(none);
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, none.size(),
               absl::StrFormat("\"shard\": {\"index\": %d, \"count\": %d}", index, count));
  Write(dir + "/summary.json", text);
}

TEST_F(MergeTest, AMissingShardIsIncompleteAndExits3UnlessAccepted) {
  for (const std::string ckpt : {"a_base", "b_new"}) {
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".shard0.jsonl", "", dir_ + "/shard0").exit_code, 0);
    RecordShard(dir_ + "/shard0/" + ckpt, 0, 2);
  }
  // Shard 1 of 2 is not given.
  RunResult partial = RunCli({"merge", "--out", dir_ + "/m", dir_ + "/shard0"});
  EXPECT_EQ(partial.exit_code, 3) << partial.err;
  EXPECT_THAT(partial.out, HasSubstr("merge: a_base: shard index 1 of 2 not given; the report is "
                                     "marked INCOMPLETE"));
  EXPECT_THAT(partial.err, HasSubstr("INCOMPLETE (exit 3)"));
  rapidjson::Document summary = ParseJson(Read(dir_ + "/m/a_base/summary.json"));
  EXPECT_TRUE(summary["provenance"]["incomplete"].GetBool());
  EXPECT_EQ(summary["counts"]["tasks"].GetInt(), 30);
  EXPECT_EQ(Str(summary["provenance"]["shards"][0]), dir_ + "/shard0");

  // Accepted: the report covers shard 0's 15 tasks and is complete.
  RunResult accepted =
      RunCli({"merge", "--out", dir_ + "/m2", "--allow-partial-shards", dir_ + "/shard0"});
  EXPECT_EQ(accepted.exit_code, 0) << accepted.err;
  EXPECT_THAT(accepted.out, HasSubstr("(accepted: --allow-partial-shards"));
  summary = ParseJson(Read(dir_ + "/m2/a_base/summary.json"));
  EXPECT_FALSE(summary["provenance"]["incomplete"].GetBool());
  EXPECT_EQ(summary["counts"]["tasks"].GetInt(), 15);
}

TEST_F(MergeTest, AShardWithoutACheckpointIsIncomplete) {
  for (const std::string ckpt : {"a_base", "b_new"}) {
    ASSERT_EQ(Score(ckpt, dir_ + "/" + ckpt + ".shard0.jsonl", "", dir_ + "/shard0").exit_code, 0);
    RecordShard(dir_ + "/shard0/" + ckpt, 0, 2);
  }
  // Shard 1 stopped before writing b_new's reports.
  ASSERT_EQ(Score("a_base", dir_ + "/a_base.shard1.jsonl", "", dir_ + "/shard1").exit_code, 0);
  RecordShard(dir_ + "/shard1/a_base", 1, 2);
  RunResult merged = RunCli({"merge", "--out", dir_ + "/m", dir_ + "/shard0", dir_ + "/shard1"});
  EXPECT_EQ(merged.exit_code, 3) << merged.err;
  EXPECT_THAT(merged.out, HasSubstr("merge: b_new: shard '" + dir_ +
                                    "/shard1' has no "
                                    "b_new/summary.json"));
  EXPECT_FALSE(
      ParseJson(Read(dir_ + "/m/a_base/summary.json"))["provenance"]["incomplete"].GetBool());
  EXPECT_TRUE(
      ParseJson(Read(dir_ + "/m/b_new/summary.json"))["provenance"]["incomplete"].GetBool());

  // Two folders of one shard index are refused (exit 2).
  const std::string text = Read(dir_ + "/shard1/a_base/summary.json");
  Write(dir_ + "/shard1/a_base/summary.json",
        absl::StrReplaceAll(text, {{"\"index\": 1", "\"index\": 0"}}));
  RunResult twice = RunCli({"merge", "--out", dir_ + "/m3", dir_ + "/shard0", dir_ + "/shard1"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_THAT(twice.err, HasSubstr("are both shard 0 of 2"));
}

// --- subsets and compare, graded for real against hb-llm-sim ------------------------------

// The real main, Hard and Consensus records under their official names in one folder (as
// scripts/fetch_data.sh lays them out), and responses files that answer main and Consensus.
class SubsetCompareTest : public OrchestratorCliTest {
 protected:
  void SetUp() override {
    OrchestratorCliTest::SetUp();
    absl::StatusOr<hb::testing::LlmSim> sim = hb::testing::StartLlmSim({});
    ASSERT_TRUE(sim.ok()) << sim.status();
    sim_ = *std::move(sim);
    data_ = dir_ + "/data";
    HB_ASSERT_OK(MakeDirs(data_));
    for (const auto& [shared, official] : std::vector<std::pair<std::string, std::string>>{
             {kMainHead30, "2025-05-07-06-14-12_oss_eval.jsonl"},
             {hb::testing::kHardHead4, "hard_2025-05-08-21-00-10.jsonl"},
             {hb::testing::kConsensus104, "consensus_2025-05-09-20-00-46.jsonl"}}) {
      Write(data_ + "/" + official, Read(SharedDataFile(shared)));
    }
    main_ = data_ + "/2025-05-07-06-14-12_oss_eval.jsonl";
    for (const char* file :
         {"2025-05-07-06-14-12_oss_eval.jsonl", "consensus_2025-05-09-20-00-46.jsonl"}) {
      HB_ASSERT_OK_AND_ASSIGN(Dataset part, LoadDataset(absl::StrCat(data_, "/", file), {}));
      for (Example& e : part.examples) all_.examples.push_back(std::move(e));
    }
    for (const std::string name : {"a", "b", "c"}) {
      responses_[name] = WriteResponses(all_, name + ".jsonl", {name == "b" ? 3u : 9999u});
    }
  }

  // `run` of checkpoint `name` into `out` with `extra` flags; the exit code.
  RunResult Run(const std::string& name, const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run",
                                     "--dataset",
                                     main_,
                                     "--responses",
                                     name + "=" + responses_[name],
                                     "--out",
                                     out,
                                     "--grader-template",
                                     ReferenceTemplatePath(),
                                     "--llm-base-url",
                                     sim_.base_url,
                                     "--simulated-verdicts",
                                     "--progress=off",
                                     "--allow-partial-responses"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCli(args);
  }

  hb::testing::LlmSim sim_;
  std::string data_, main_;
  Dataset all_;  // main then Consensus records
  std::map<std::string, std::string> responses_;
};

// Task scores by prompt_id from a tasks.jsonl.
std::map<std::string, double> TaskScores(const std::string& path) {
  std::map<std::string, double> scores;
  for (const std::string& line : Lines(Read(path))) {
    rapidjson::Document doc = ParseJson(line);
    if (doc["score"].IsNumber()) scores[Str(doc["prompt_id"])] = Num(doc["score"]);
  }
  return scores;
}

TEST_F(SubsetCompareTest, OneResponsesFileGradesMainHardAndConsensus) {
  // Without --ignore-extra-responses, the Consensus answers are an error that says the fix.
  RunResult strict = Run("a", dir_ + "/strict", {});
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_THAT(strict.err, HasSubstr("unknown prompt_id"));
  EXPECT_THAT(strict.err, HasSubstr("--ignore-extra-responses"));

  RunResult main = Run("a", dir_ + "/main", {"--ignore-extra-responses"});
  ASSERT_EQ(main.exit_code, 0) << main.err;
  EXPECT_THAT(main.err, HasSubstr("a: ignored 104 response(s) for tasks outside"));
  RunResult hard = Run("a", dir_ + "/hard", {"--subset", "hard"});
  ASSERT_EQ(hard.exit_code, 0) << hard.err;
  RunResult consensus = Run("a", dir_ + "/consensus", {"--subset=consensus"});
  ASSERT_EQ(consensus.exit_code, 0) << consensus.err;

  rapidjson::Document h = ParseJson(Read(dir_ + "/hard/a/summary.json"));
  EXPECT_EQ(h["counts"]["graded"].GetInt(), 4);
  EXPECT_EQ(h["counts"]["rows"].GetInt(), 59);
  EXPECT_EQ(Str(h["provenance"]["subset"]), "hard");
  EXPECT_EQ(Str(h["provenance"]["dataset"]["path"]), data_ + "/hard_2025-05-08-21-00-10.jsonl");
  EXPECT_EQ(h["provenance"]["responses"]["ignored_extra"].GetInt(), 130);
  // Hard's records are main's, byte for byte: the same reply gets the same task score.
  const std::map<std::string, double> main_scores = TaskScores(dir_ + "/main/a/tasks.jsonl");
  const std::map<std::string, double> hard_scores = TaskScores(dir_ + "/hard/a/tasks.jsonl");
  ASSERT_EQ(hard_scores.size(), 4u);
  for (const auto& [id, score] : hard_scores) EXPECT_EQ(score, main_scores.at(id)) << id;

  // Consensus: only cluster items (2 per record), scored like any rubric (SPEC §14), each
  // cluster tag its own metric.
  rapidjson::Document c = ParseJson(Read(dir_ + "/consensus/a/summary.json"));
  EXPECT_EQ(c["counts"]["graded"].GetInt(), 104);
  EXPECT_EQ(c["counts"]["rows"].GetInt(), 208);
  EXPECT_EQ(c["provenance"]["responses"]["ignored_extra"].GetInt(), 30);
  EXPECT_TRUE(c["metrics"].HasMember("level:cluster"));
  EXPECT_FALSE(c["metrics"].HasMember("level:example"));
  int clusters = 0;
  for (const auto& m : c["metrics"].GetObject()) {
    clusters += absl::StartsWith(m.name.GetString(), "cluster:") &&
                !absl::StrContains(m.name.GetString(), ":n_samples") &&
                !absl::StrContains(m.name.GetString(), ":bootstrap_std");
  }
  EXPECT_EQ(clusters, 4);  // SOURCES.md: 4 unique criteria in the 104 records
  EXPECT_THAT(Read(dir_ + "/consensus/a/report.html"), HasSubstr("consensus"));

  // A subset file that is not there: the error names the path and both fixes, within seconds.
  RunResult missing =
      RunCli({"score", "--dataset", dir_ + "/elsewhere/main.jsonl", "--subset", "hard",
              "--responses", responses_["a"], "--verdicts", "v", "--out", dir_ + "/o"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "hb-orchestrator score: --subset hard: no " + dir_ +
                             "/elsewhere/hard_2025-05-08-21-00-10.jsonl (or .gz) beside "
                             "--dataset; get it with scripts/fetch_data.sh, or name the hard file "
                             "with --subset-dataset FILE (or give it as --dataset with "
                             "--ignore-extra-responses)\n");
  RunResult bad = RunCli({"score", "--subset", "medium", "--dataset", main_});
  EXPECT_EQ(bad.err,
            "hb-orchestrator score: --subset: expected main, hard or consensus, got "
            "'medium'\n");
}

TEST_F(SubsetCompareTest, CompareOfSeparatelyGradedCheckpointsEqualsTheirSummaries) {
  for (const std::string name : {"a", "b", "c"}) {
    RunResult r = Run(name, dir_ + "/job-" + name, {"--ignore-extra-responses"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // The same three graded in one run: its comparison is the reference for compare's.
  RunResult together =
      RunCli({"run", "--dataset", main_, "--responses", "a=" + responses_["a"], "--responses",
              "b=" + responses_["b"], "--responses", "c=" + responses_["c"], "--out",
              dir_ + "/together", "--grader-template", ReferenceTemplatePath(), "--llm-base-url",
              sim_.base_url, "--simulated-verdicts", "--progress=off", "--allow-partial-responses",
              "--ignore-extra-responses"});
  ASSERT_EQ(together.exit_code, 0) << together.err;

  // A run folder, a checkpoint folder and a relative path, in that order.
  ASSERT_EQ(::chdir(dir_.c_str()), 0);
  RunResult cmp =
      RunCli({"compare", "--out", dir_ + "/cmp", dir_ + "/job-a", dir_ + "/job-b/b", "job-c"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_THAT(cmp.out, HasSubstr("compare: baseline a;"));
  rapidjson::Document doc = ParseJson(Read(dir_ + "/cmp/comparison.json"));
  rapidjson::Document reference = ParseJson(Read(dir_ + "/together/comparison.json"));
  EXPECT_EQ(Str(doc["baseline"]), "a");
  EXPECT_EQ(doc["common_tasks"].GetInt(), 29);  // b has no response for task 3
  ASSERT_EQ(doc["checkpoints"].Size(), 3u);
  const char* names[] = {"a", "b", "c"};
  for (rapidjson::SizeType i = 0; i < 3; ++i) {
    SCOPED_TRACE(names[i]);
    const rapidjson::Value& got = doc["checkpoints"][i];
    rapidjson::Document summary =
        ParseJson(Read(dir_ + "/job-" + names[i] + "/" + names[i] + "/summary.json"));
    EXPECT_EQ(Str(got["checkpoint"]), names[i]);
    EXPECT_EQ(Str(got["path"]), dir_ + "/job-" + names[i] + "/" + names[i]);
    EXPECT_EQ(Num(got["score"]), Num(summary["score"]));
    EXPECT_EQ(Num(got["bootstrap_std"]), Num(summary["metrics"]["score:bootstrap_std"]));
    EXPECT_EQ(got["graded"].GetInt(), summary["counts"]["graded"].GetInt());
    EXPECT_EQ(got["tasks"].GetInt(), summary["counts"]["tasks"].GetInt());
    EXPECT_TRUE(got["simulated"].GetBool());
    EXPECT_FALSE(got["incomplete"].GetBool());
    int metrics = 0;
    for (const auto& m : got["metrics"].GetObject()) {
      const std::string key = m.name.GetString();
      EXPECT_EQ(Num(m.value["mean"]), Num(summary["metrics"][key.c_str()])) << key;
      EXPECT_EQ(Num(m.value["bootstrap_std"]),
                Num(summary["metrics"][(key + ":bootstrap_std").c_str()]))
          << key;
      EXPECT_EQ(m.value["n_samples"].GetInt(),
                summary["metrics"][(key + ":n_samples").c_str()].GetInt())
          << key;
      ++metrics;
    }
    EXPECT_GE(metrics, 7 + 5 - 2);  // the themes and axes of 30 tasks
    EXPECT_EQ(Num(got["score"]), Num(reference["checkpoints"][i]["score"]));
  }
  // The paired differences equal the one-run comparison's: one code path, the same tasks.
  ASSERT_EQ(doc["differences"].Size(), 2u);
  for (rapidjson::SizeType i = 0; i < 2; ++i) {
    for (const char* key : {"difference", "ci_low", "ci_high"}) {
      EXPECT_EQ(Num(doc["differences"][i][key]), Num(reference["differences"][i][key])) << key;
    }
    EXPECT_EQ(doc["differences"][i]["n"].GetInt(), reference["differences"][i]["n"].GetInt());
  }
  EXPECT_EQ(doc["differences"][0]["n"].GetInt(), 29);
  const std::string html = Read(dir_ + "/cmp/comparison.html");
  EXPECT_THAT(html, HasSubstr("href=\"../job-a/a/report.html\""));
  EXPECT_THAT(html, HasSubstr("SIMULATED: a, b, c"));
  EXPECT_THAT(html, HasSubstr("<b>29</b> tasks graded by every checkpoint"));

  // An explicit baseline keeps the order given.
  RunResult based =
      RunCli({"compare", "--out", dir_ + "/cmp2", "--baseline", "c", "job-a", "job-b", "job-c"});
  ASSERT_EQ(based.exit_code, 0) << based.err;
  rapidjson::Document doc2 = ParseJson(Read(dir_ + "/cmp2/comparison.json"));
  EXPECT_EQ(Str(doc2["baseline"]), "c");
  EXPECT_EQ(Str(doc2["checkpoints"][0]["checkpoint"]), "a");
  EXPECT_EQ(Str(doc2["differences"][0]["checkpoint"]), "a");
  EXPECT_EQ(Str(doc2["differences"][1]["checkpoint"]), "b");
}

TEST_F(SubsetCompareTest, CompareRejectsRepeatedNamesMissingSummariesAndOtherDatasets) {
  ASSERT_EQ(Run("a", dir_ + "/job-a", {"--ignore-extra-responses"}).exit_code, 0);
  ASSERT_EQ(Run("b", dir_ + "/hard-b", {"--subset", "hard"}).exit_code, 0);
  const std::string a = dir_ + "/job-a";
  RunResult twice = RunCli({"compare", "--out", dir_ + "/x", a, a + "/a"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_EQ(twice.err, "hb-orchestrator compare: checkpoint name 'a' used twice: " + a + "/a and " +
                           a +
                           "/a (rename one folder's checkpoint, or compare them in separate "
                           "calls)\n");
  RunResult empty = RunCli({"compare", "--out", dir_ + "/x", a, data_});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_EQ(empty.err, "hb-orchestrator compare: '" + data_ +
                           "' is neither a checkpoint folder (no summary.json) nor a run folder "
                           "(folder '" +
                           data_ + "' has no <checkpoint>/summary.json)\n");
  RunResult other = RunCli({"compare", "--out", dir_ + "/x", a, dir_ + "/hard-b"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, StartsWith("hb-orchestrator compare: checkpoint 'b' (" + dir_ +
                                    "/hard-b/b) was graded differently from the baseline 'a': "
                                    "dataset sha256 ('"));
  RunResult baseline =
      RunCli({"compare", "--out", dir_ + "/x", "--baseline", "z", a, dir_ + "/hard-b"});
  EXPECT_EQ(baseline.err,
            "hb-orchestrator compare: --baseline 'z' is none of the checkpoints: "
            "a, b\n");
  RunResult one = RunCli({"compare", "--out", dir_ + "/x", a});
  EXPECT_EQ(one.err,
            "hb-orchestrator compare: compare needs at least two checkpoints; the "
            "folders given hold 1\n");
}

// --- bad inputs ---------------------------------------------------------------------------

TEST_F(OrchestratorCliTest, BadInputsFailWithTheExactMessage) {
  const std::string d = examples_ + "/dataset.jsonl";
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset, LoadDataset(d, {}));
  const std::string id = dataset.examples[0].prompt_id;
  const std::string unknown = dir_ + "/unknown.jsonl";
  Write(unknown, "{\"prompt_id\":\"" + id + "\",\"response\":\"r\"}\n" +
                     "{\"prompt_id\":\"nope\",\"response\":\"r\"}\n");
  // Answers another dataset: no line is for a task of `d`.
  const std::string foreign = dir_ + "/foreign.jsonl";
  Write(foreign,
        "{\"prompt_id\":\"nope\",\"response\":\"r\"}\n{\"prompt_id\":\"nah\","
        "\"response\":\"s\"}\n");
  const std::string duplicate = dir_ + "/duplicate.jsonl";
  Write(duplicate, "{\"prompt_id\":\"" + id + "\",\"response\":\"r\"}\n{\"prompt_id\":\"" + id +
                       "\",\"response\":\"s\"}\n");
  const std::string bad_verdicts = dir_ + "/verdicts.jsonl";
  Write(bad_verdicts,
        "{\"prompt_id\":\"nope\",\"rubric_index\":0,\"criteria_met\":true,\"explanation\":\"\"}\n");
  const std::string plain = dir_ + "/plain";
  Write(plain, "not a folder");
  const std::string v = examples_ + "/verdicts.jsonl", r = examples_ + "/responses.jsonl";
  const std::vector<std::string> lax = {"--grader-template", synthetic_template_,
                                        "--require-reference-template=false"};
  auto with = [&](std::vector<std::string> args, bool template_flags) {
    if (template_flags) args.insert(args.end(), lax.begin(), lax.end());
    return args;
  };
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {with(
           {"score", "--dataset", d, "--responses", unknown, "--verdicts", v, "--out", dir_ + "/o"},
           true),
       "hb-orchestrator score: " + unknown + ":2: unknown prompt_id 'nope' (not in " + d +
           "; to grade a subset with the responses to the whole set, pass "
           "--ignore-extra-responses)\n"},
      // A file that answers no task is not offered --ignore-extra-responses (it would grade
      // nothing), with the flag or without.
      {with(
           {"score", "--dataset", d, "--responses", foreign, "--verdicts", v, "--out", dir_ + "/o"},
           true),
       "hb-orchestrator score: " + foreign + ": no response is for a task of " + d +
           " (the first, line 1, is for prompt_id 'nope'): these responses answer another "
           "dataset; give the dataset they answer, or the responses to this one\n"},
      {with({"score", "--dataset", d, "--responses", foreign, "--ignore-extra-responses",
             "--verdicts", v, "--out", dir_ + "/o"},
            true),
       "hb-orchestrator score: " + foreign + ": no response is for a task of " + d +
           " (the first, line 1, is for prompt_id 'nope'): these responses answer another "
           "dataset; give the dataset they answer, or the responses to this one\n"},
      {with({"dry-run", "--dataset", d, "--responses", duplicate, "--out", dir_ + "/o.jsonl"},
            true),
       "hb-orchestrator dry-run: " + duplicate + ":2: duplicate prompt_id '" + id +
           "' (first on line 1)\n"},
      {with({"score", "--dataset", d, "--responses", r, "--verdicts", bad_verdicts, "--out",
             dir_ + "/o"},
            true),
       "hb-orchestrator score: " + bad_verdicts + ":1: unknown prompt_id 'nope'\n"},
      {with(
           {"score", "--dataset", d, "--responses", r, "--verdicts", v, "--out", plain + "/report"},
           true),
       "hb-orchestrator score: cannot create directory " + plain + "/report: Not a directory\n"},
      {with({"tasks", "--dataset", d, "--out", plain + "/sub/tasks.jsonl"}, false),
       "hb-orchestrator tasks: cannot create directory " + plain + "/sub: Not a directory\n"},
      {with({"dry-run", "--dataset", d, "--responses", r, "--out", plain + "/x/requests.jsonl"},
            true),
       "hb-orchestrator dry-run: cannot create directory " + plain + "/x: Not a directory\n"},
  };
  for (const auto& [args, expected] : cases) {
    RunResult result = RunCli(args);
    EXPECT_EQ(result.exit_code, 2) << absl::StrJoin(args, " ");
    EXPECT_EQ(result.err, expected) << absl::StrJoin(args, " ");
  }
  RunResult missing = RunCli({"tasks", "--dataset", dir_ + "/absent.jsonl", "--out", dir_ + "/t"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, StartsWith("hb-orchestrator tasks: "));
  EXPECT_THAT(missing.err, HasSubstr(dir_ + "/absent.jsonl"));
}

// `hb-orchestrator help COMMAND` prints that command's help, as `COMMAND --help` does; the
// top-level help gives each command a whole first sentence, and says `run` grades in process by
// default.
TEST_F(OrchestratorCliTest, HelpCommandAndTheTopLevelSummaries) {
  const RunResult help_run = RunCli({"help", "run"});
  EXPECT_EQ(help_run.exit_code, 0) << help_run.err;
  EXPECT_EQ(help_run.out, RunCli({"run", "--help"}).out);
  EXPECT_THAT(help_run.out, HasSubstr("Usage: hb-orchestrator run [OPTIONS]"));
  const RunResult unknown = RunCli({"help", "runn"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(unknown.err, "hb-orchestrator: unknown command 'runn' (see hb-orchestrator --help)\n");

  const std::string top = RunCli({"--help"}).out;
  // Every entry of the command list (continuation lines joined, spaces collapsed) ends a
  // sentence.
  const size_t begin = top.find("Subcommands:\n");
  ASSERT_NE(begin, std::string::npos) << top;
  const std::string list = top.substr(begin, top.find("\n\n", begin) - begin);
  std::vector<std::string> entries;
  for (const std::string& line : Lines(list)) {
    if (absl::StartsWith(line, "  ") && line[2] != ' ') {
      entries.push_back(line);
    } else if (!entries.empty()) {
      entries.back() += " " + std::string(absl::StripLeadingAsciiWhitespace(line));
    }
  }
  EXPECT_GE(entries.size(), 8u) << list;
  for (std::string& entry : entries) {
    entry = absl::StrJoin(absl::StrSplit(entry, ' ', absl::SkipEmpty()), " ");
    EXPECT_TRUE(absl::EndsWith(entry, ".")) << entry;
  }
  EXPECT_THAT(entries,
              ::testing::Contains("run grade checkpoints, in this process (the default) or through "
                                  "hb-grader replicas."));
  EXPECT_THAT(entries, ::testing::Contains(
                           "dry-run write the grader requests a run would send, without sending "
                           "any."));
}

// --version prints the version every summary.json records (project version + git describe).
TEST_F(OrchestratorCliTest, VersionIsTheToolVersionOfTheReports) {
  const RunResult version = RunCli({"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, std::string(ToolVersion()) + "\n");
}

// Flag values and input paths that are wrong say which flag and what it takes.
TEST_F(OrchestratorCliTest, RunErrorsNameTheFlagAndTheExpectedForm) {
  const std::string d = examples_ + "/dataset.jsonl", r = examples_ + "/responses.jsonl";
  const RunResult timeout =
      RunCli({"run", "--dataset", d, "--responses", r, "--out", dir_ + "/o", "--row-timeout", "5"});
  EXPECT_EQ(timeout.exit_code, 2);
  EXPECT_EQ(timeout.err,
            "hb-orchestrator run: invalid value '5' for --row-timeout: expected a duration with a "
            "unit, e.g. 5s, 300ms, 2m or 1h30m (see hb-orchestrator run --help)\n");
  const std::string local = "--llm-base-url=http://127.0.0.1:1/v1";  // no key needed
  const RunResult no_template =
      RunCli({"run", "--dataset", d, "--responses", r, "--out", dir_ + "/o", local,
              "--grader-template", dir_ + "/none.txt"});
  EXPECT_EQ(no_template.exit_code, 2);
  EXPECT_THAT(no_template.err,
              StartsWith("hb-orchestrator run: --grader-template " + dir_ + "/none.txt: "));
  EXPECT_THAT(no_template.err, HasSubstr("scripts/fetch_data.sh --template-only"));
  const RunResult no_dataset =
      RunCli({"run", "--dataset", dir_ + "/none.jsonl", "--responses", r, "--out", dir_ + "/o",
              local, "--grader-template", ReferenceTemplatePath()});
  EXPECT_EQ(no_dataset.exit_code, 2);
  EXPECT_THAT(no_dataset.err,
              StartsWith("hb-orchestrator run: --dataset " + dir_ + "/none.jsonl: "));
  // Neither refusal left an --out folder behind (not even one holding .lock).
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/o"));
}

}  // namespace
}  // namespace hb
