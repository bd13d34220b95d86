// End-to-end tests of `hb-orchestrator run` with real processes on loopback: hb-llm-sim as the
// upstream model, two hb-grader replicas, and the orchestrator binary. Verdicts are checked
// against hb::SimulatedVerdict, the simulator's documented rule.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/curl_http_client.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/journal_query.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::ChildProcess;
using ::hb::testing::LlmSim;
using ::hb::testing::MakeTempDir;
using ::hb::testing::PollUntil;
using ::hb::testing::ReferenceTemplatePath;
using ::hb::testing::SharedDataFile;
using ::hb::testing::SimCounter;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFixedTime[] = "HB_FIXED_TIME=2025-06-01T00:00:00Z";

std::string Orchestrator() { return BinaryDir() + "/orchestrator/hb-orchestrator"; }

// ---- Processes -----------------------------------------------------------------------------

// The orchestrator as a child with stdout/stderr in files.
struct Orch {
  pid_t pid = -1;
  std::string stderr_path;
};

// `env` ("NAME=value", value possibly empty) replaces those variables of this process's
// environment.
Orch SpawnOrchestrator(const std::vector<std::string>& args, const std::string& log_dir,
                       const std::vector<std::string>& env = {}) {
  static int counter = 0;
  Orch orch;
  orch.stderr_path = absl::StrCat(log_dir, "/orchestrator-", ++counter, ".stderr");
  const std::string stdout_path = orch.stderr_path + ".stdout";
  std::vector<std::string> argv_strings = {Orchestrator()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = {kFixedTime};
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  const auto replaced = [&env](absl::string_view entry) {
    for (const std::string& e : env) {
      if (absl::StartsWith(entry, e.substr(0, e.find('=') + 1))) return true;
    }
    return false;
  };
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, "HB_FIXED_TIME=") && !absl::StartsWith(*e, "JOB_COMPLETION_INDEX=") &&
        !replaced(*e)) {
      env_strings.emplace_back(*e);
    }
  }
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const int out_fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err_fd = ::open(orch.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  orch.pid = ::fork();
  if (orch.pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  return orch;
}

// Waits for the child's exit; returns its exit code, or -1 (after SIGKILL) on timeout, or
// 128 + signal when it was killed.
int WaitExit(pid_t pid, absl::Duration timeout = absl::Seconds(120)) {
  int status = 0;
  if (!PollUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, timeout)) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string ReadText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : std::string("<missing ") + path + ">";
}

int RunOrchestrator(const std::vector<std::string>& args, const std::string& log_dir,
                    std::string* stderr_text = nullptr, const std::vector<std::string>& env = {}) {
  Orch orch = SpawnOrchestrator(args, log_dir, env);
  const int code = WaitExit(orch.pid);
  if (stderr_text != nullptr) *stderr_text = ReadText(orch.stderr_path);
  if (code != 0) std::cerr << "orchestrator stderr:\n" << ReadText(orch.stderr_path);
  return code;
}

// hb-llm-sim plus `replicas` hb-grader processes pointed at it.
struct Cluster {
  LlmSim sim;
  std::vector<std::unique_ptr<ChildProcess>> graders;
  std::vector<int> ports;

  std::string Target() const {
    std::vector<std::string> addresses;
    for (int port : ports) addresses.push_back(absl::StrCat("127.0.0.1:", port));
    return "ipv4:" + absl::StrJoin(addresses, ",");
  }
};

// `grader_flags` are added to every hb-grader's command line; `replica_flags[i]`, when given,
// to replica i's only.
absl::StatusOr<std::unique_ptr<Cluster>> StartCluster(
    int replicas, const std::vector<std::string>& sim_flags,
    const std::vector<std::string>& grader_flags = {},
    const std::vector<std::vector<std::string>>& replica_flags = {}) {
  auto cluster = std::make_unique<Cluster>();
  absl::StatusOr<LlmSim> sim = hb::testing::StartLlmSim(sim_flags);
  if (!sim.ok()) return sim.status();
  cluster->sim = *std::move(sim);
  for (int i = 0; i < replicas; ++i) {
    std::vector<std::string> flags = grader_flags;
    if (static_cast<size_t>(i) < replica_flags.size()) {
      flags.insert(flags.end(), replica_flags[i].begin(), replica_flags[i].end());
    }
    absl::StatusOr<hb::testing::GraderReplica> grader =
        hb::testing::StartGrader(cluster->sim, flags);
    if (!grader.ok()) return grader.status();
    const int port = grader->port;
    cluster->graders.push_back(std::move(grader->process));
    cluster->ports.push_back(port);
  }
  return cluster;
}

// ---- Data ----------------------------------------------------------------------------------

// Synthetic responses for every task of `dataset_path`: a reply naming the task and
// `flavour`, and a system prompt on every third task.
std::string WriteResponses(const std::string& dataset_path, const std::string& flavour,
                           const std::string& path) {
  absl::StatusOr<Dataset> dataset = LoadDataset(dataset_path, {});
  EXPECT_TRUE(dataset.ok()) << dataset.status();
  std::string out;
  for (size_t i = 0; i < dataset->examples.size(); ++i) {
    const std::string& id = dataset->examples[i].prompt_id;
    absl::StrAppend(&out, "{\"prompt_id\": ", JsonQuote(id), ", \"response\": ",
                    JsonQuote(absl::StrCat("Synthetic ", flavour, " reply number ", i,
                                           ": see a clinician if symptoms persist.")));
    if (i % 3 == 0) absl::StrAppend(&out, ", \"system_prompt\": \"You are a careful assistant.\"");
    absl::StrAppend(&out, "}\n");
  }
  EXPECT_THAT(WriteFileAtomically(path, out), hb::testing::IsOk());
  return path;
}

// The rows of `table` in `journal` with `where` (SQL) true; 0 when it cannot be read.
int64_t CountJournalTable(const std::string& journal, const std::string& table,
                          const std::string& where) {
  return std::max<int64_t>(0, ::hb::testing::QueryJournalInt(
                                  journal, "SELECT COUNT(*) FROM " + table + " WHERE " + where));
}

int64_t CountJournalRows(const std::string& journal, const std::string& where) {
  return CountJournalTable(journal, "rows", where);
}

int64_t JournalOkRows(const std::string& journal) {
  return CountJournalRows(journal, "status = 'ok'");
}
int64_t JournalRows(const std::string& journal) { return CountJournalRows(journal, "1"); }

// Polls `ready` (a journal or the simulator, as any observer would) until it holds (true), or
// `pid` exits or 60 s pass (false).
bool WaitWhileRunning(pid_t pid, const std::function<bool()>& ready) {
  bool exited = false;
  const bool done = PollUntil([&] {
    if (ready()) return true;
    exited = ::waitpid(pid, nullptr, WNOHANG) != 0;
    return exited;
  });
  return done && !exited;
}

// Polls the journal (a separate reader, as any observer would) until it holds `n` ok rows.
bool WaitForJournalRows(const std::string& journal, int64_t n, pid_t still_running) {
  return WaitWhileRunning(still_running, [&] { return JournalOkRows(journal) >= n; });
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    out.emplace_back(line);
  }
  return out;
}

// The rows of a checkpoint's verdicts.jsonl: its lines after the verdicts_header line.
std::vector<std::string> VerdictRows(const std::string& path) {
  std::vector<std::string> lines = Lines(ReadText(path));
  EXPECT_FALSE(lines.empty()) << path;
  if (lines.empty()) return lines;
  EXPECT_THAT(lines.front(), HasSubstr("{\"verdicts_header\":")) << path;
  lines.erase(lines.begin());
  return lines;
}

// summary.json without what legitimately differs between runs of the same inputs: the usage
// (prompt-cache hits, attempts) and the provenance (endpoints, paths, time).
std::string StableSummary(const std::string& path) {
  rapidjson::Document doc;
  doc.Parse(ReadText(path).c_str());
  if (doc.HasParseError() || !doc.IsObject()) return "<unparsable " + path + ">";
  for (const char* key : {"usage", "provenance", "generated_at"}) doc.RemoveMember(key);
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return buffer.GetString();
}

// summary.json's "usage" object (null when unreadable).
rapidjson::Document Usage(const std::string& summary_path) {
  rapidjson::Document doc;
  doc.Parse(ReadText(summary_path).c_str());
  rapidjson::Document usage;
  if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("usage")) {
    usage.CopyFrom(doc["usage"], usage.GetAllocator());
  }
  return usage;
}

// The chat requests hb-llm-sim logged (--request-log).
int64_t LoggedRequests(const std::string& log) {
  return static_cast<int64_t>(Lines(ReadText(log)).size());
}

// Every row of `verdicts_path` has from_cache == `expected`; returns the rows.
size_t ExpectFromCache(const std::string& verdicts_path, bool expected) {
  const std::vector<std::string> lines = VerdictRows(verdicts_path);
  for (const std::string& line : lines) {
    rapidjson::Document row;
    row.Parse(line.c_str());
    EXPECT_TRUE(!row.HasParseError() && row.HasMember("from_cache") &&
                row["from_cache"].GetBool() == expected)
        << line;
  }
  return lines.size();
}

void ExpectSameReports(const std::string& a, const std::string& b,
                       const std::vector<std::string>& checkpoints) {
  for (const std::string& c : checkpoints) {
    SCOPED_TRACE("checkpoint " + c);
    for (const std::string& dir : {a, b}) {
      EXPECT_THAT(StableSummary(dir + "/" + c + "/summary.json"), HasSubstr("\"score\""));
      EXPECT_THAT(ReadText(dir + "/" + c + "/tasks.jsonl"), HasSubstr("\"prompt_id\""));
    }
    EXPECT_EQ(ReadText(a + "/" + c + "/tasks.jsonl"), ReadText(b + "/" + c + "/tasks.jsonl"));
    EXPECT_EQ(StableSummary(a + "/" + c + "/summary.json"),
              StableSummary(b + "/" + c + "/summary.json"));
    EXPECT_EQ(VerdictRows(a + "/" + c + "/verdicts.jsonl").size(),
              VerdictRows(b + "/" + c + "/verdicts.jsonl").size());
  }
}

class RunIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    dataset_ = SharedDataFile(hb::testing::kMainHead30);
    base_ = WriteResponses(dataset_, "base", dir_ + "/base.jsonl");
    tuned_ = WriteResponses(dataset_, "tuned", dir_ + "/tuned.jsonl");
    absl::StatusOr<Dataset> dataset = LoadDataset(dataset_, {});
    ASSERT_TRUE(dataset.ok()) << dataset.status();
    for (const Example& e : dataset->examples) rows_per_checkpoint_ += e.rubrics.size();
  }

  std::vector<std::string> RunArgs(const std::string& out, const std::string& target,
                                   std::vector<std::string> extra = {},
                                   bool two_checkpoints = true) const {
    std::vector<std::string> args = {"run",
                                     "--dataset=" + dataset_,
                                     "--responses=base=" + base_,
                                     "--out=" + out,
                                     "--grader=" + target,
                                     "--grader-template=" + ReferenceTemplatePath(),
                                     "--progress=log",
                                     "--progress-interval=100ms",
                                     "--simulated-verdicts"};
    if (two_checkpoints) args.push_back("--responses=tuned=" + tuned_);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Every verdicts.jsonl row of `out`/`checkpoint` must be the simulator's prediction; returns
  // how many rows were checked.
  size_t CheckVerdictsMatchSimulator(const std::string& out, const std::string& checkpoint,
                                     const std::string& responses_path) {
    absl::StatusOr<Dataset> dataset = LoadDataset(dataset_, {});
    absl::StatusOr<ResponseSet> responses = LoadResponses(responses_path, *dataset);
    absl::StatusOr<GraderTemplate> tmpl = GraderTemplate::Load(ReferenceTemplatePath());
    EXPECT_TRUE(dataset.ok() && responses.ok() && tmpl.ok());
    if (!dataset.ok() || !responses.ok() || !tmpl.ok()) return 0;
    size_t checked = 0;
    for (const std::string& line : VerdictRows(out + "/" + checkpoint + "/verdicts.jsonl")) {
      rapidjson::Document row;
      row.Parse(line.c_str());
      EXPECT_FALSE(row.HasParseError()) << line;
      if (row.HasParseError()) continue;
      const std::string id = row["prompt_id"].GetString();
      const int index = row["rubric_index"].GetInt();
      const Example* example = dataset->Find(id);
      const Response* response = responses->Find(id);
      EXPECT_TRUE(example != nullptr && response != nullptr) << line;
      if (example == nullptr || response == nullptr) continue;
      const std::string prompt =
          tmpl->Fill(RenderConversation(GradedConversation(example->prompt, response->system_prompt,
                                                           response->response)),
                     RenderRubricItem(example->rubrics[index]));
      EXPECT_EQ(row["criteria_met"].GetBool(), SimulatedVerdict(prompt))
          << checkpoint << " " << id << " #" << index;
      ++checked;
    }
    return checked;
  }

  std::string dir_;
  std::string dataset_;
  std::string base_;
  std::string tuned_;
  size_t rows_per_checkpoint_ = 0;
};

TEST_F(RunIntegrationTest, EndToEndVerdictsAreTheSimulatorsPrediction) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(2, {}));
  const std::string out = dir_ + "/out";
  std::string stderr_text;
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target()), dir_, &stderr_text), 0);
  EXPECT_THAT(stderr_text, HasSubstr("SIMULATED VERDICTS"));
  EXPECT_THAT(stderr_text, HasSubstr("progress: rows "));
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "tuned", tuned_), rows_per_checkpoint_);
  EXPECT_EQ(ReadText(out + "/base/failures.jsonl"), "");
  EXPECT_THAT(ReadText(out + "/base/summary.json"), HasSubstr("\"simulated\": true"));
  EXPECT_THAT(ReadText(out + "/comparison.json"), HasSubstr("tuned"));

  // A second run finds every row in the journal and grades nothing.
  std::string again;
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target()), dir_, &again), 0);
  EXPECT_THAT(again, HasSubstr(absl::StrCat(2 * rows_per_checkpoint_,
                                            " already graded in the journal, 0 to grade")));
}

TEST_F(RunIntegrationTest, SurvivesTheLossOfAGraderReplica) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(2, {"--latency-ms=20"}));
  const std::string out = dir_ + "/out";
  Orch orch = SpawnOrchestrator(
      RunArgs(out, cluster->Target(), {"--max-in-flight=8"}, /*two_checkpoints=*/false), dir_);
  ASSERT_TRUE(WaitForJournalRows(out + "/journal.sqlite", 40, orch.pid))
      << ReadText(orch.stderr_path);
  // Kill replica 0 abruptly while rows are in flight on it.
  cluster->graders[0]->Stop(SIGKILL, absl::Seconds(10));
  const int code = WaitExit(orch.pid);
  ASSERT_EQ(code, 0) << ReadText(orch.stderr_path);
  EXPECT_EQ(ReadText(out + "/base/failures.jsonl"), "");
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
}

TEST_F(RunIntegrationTest, ResumesAfterSigkillWithoutRegradingCommittedRows) {
  const std::string out = dir_ + "/resumed";
  int64_t committed_at_kill = 0;
  {
    HB_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Cluster> cluster,
        StartCluster(2, {"--latency-ms=20", "--request-log=" + dir_ + "/requests-1.jsonl"}));
    Orch orch = SpawnOrchestrator(RunArgs(out, cluster->Target(), {"--max-in-flight=4"}), dir_);
    ASSERT_TRUE(WaitForJournalRows(out + "/journal.sqlite", 60, orch.pid))
        << ReadText(orch.stderr_path);
    ::kill(orch.pid, SIGKILL);
    ASSERT_EQ(WaitExit(orch.pid), 128 + SIGKILL);
    committed_at_kill = JournalOkRows(out + "/journal.sqlite");
    ASSERT_LT(committed_at_kill, static_cast<int64_t>(2 * rows_per_checkpoint_));
  }  // the graders and the simulator stop with the first run's requests logged
  const std::string log2 = dir_ + "/requests-2.jsonl";
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster,
                          StartCluster(2, {"--request-log=" + log2}));
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target()), dir_), 0);
  // Exactly the rows missing from the journal were graded again: no committed row twice.
  EXPECT_EQ(static_cast<int64_t>(Lines(ReadText(log2)).size()),
            static_cast<int64_t>(2 * rows_per_checkpoint_) - committed_at_kill);

  // The same reports as a run that was never interrupted, and the same totals: the rows the
  // killed run committed keep their tokens.
  const std::string clean = dir_ + "/clean";
  ASSERT_EQ(RunOrchestrator(RunArgs(clean, cluster->Target()), dir_), 0);
  ExpectSameReports(out, clean, {"base", "tuned"});
  for (const char* c : {"base", "tuned"}) {
    const rapidjson::Document resumed = Usage(out + "/" + c + "/summary.json");
    const rapidjson::Document whole = Usage(clean + "/" + c + "/summary.json");
    ASSERT_TRUE(resumed.IsObject() && whole.IsObject()) << c;
    EXPECT_GT(whole["prompt_tokens"].GetInt64(), 0);
    EXPECT_EQ(resumed["prompt_tokens"].GetInt64(), whole["prompt_tokens"].GetInt64()) << c;
    EXPECT_EQ(resumed["completion_tokens"].GetInt64(), whole["completion_tokens"].GetInt64());
    EXPECT_GT(resumed["cost_usd"].GetDouble(), 0);
    EXPECT_GT(resumed["wall_seconds"].GetDouble(), 0);
  }
  EXPECT_EQ(StableSummary(out + "/comparison.json"), StableSummary(clean + "/comparison.json"));
}

TEST_F(RunIntegrationTest, ShardedRunsMergeToTheUnshardedResult) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(2, {}));
  const std::string sharded = dir_ + "/sharded";
  for (int shard = 0; shard < 2; ++shard) {
    ASSERT_EQ(RunOrchestrator(RunArgs(sharded, cluster->Target(),
                                      {"--shard-count=2", absl::StrCat("--shard-index=", shard)}),
                              dir_),
              0);
  }
  // Each shard graded its own half of the tasks.
  const size_t shard0 = VerdictRows(sharded + "/shard-0/base/verdicts.jsonl").size();
  const size_t shard1 = VerdictRows(sharded + "/shard-1/base/verdicts.jsonl").size();
  EXPECT_GT(shard0, 0u);
  EXPECT_GT(shard1, 0u);
  EXPECT_EQ(shard0 + shard1, rows_per_checkpoint_);

  const std::string merged = dir_ + "/merged";
  std::string merge_stderr;
  ASSERT_EQ(
      RunOrchestrator({"merge", "--out=" + merged, sharded + "/shard-0", sharded + "/shard-1"},
                      dir_, &merge_stderr),
      0)
      << merge_stderr;
  const std::string whole = dir_ + "/whole";
  ASSERT_EQ(RunOrchestrator(RunArgs(whole, cluster->Target()), dir_), 0);
  ExpectSameReports(merged, whole, {"base", "tuned"});
  EXPECT_EQ(StableSummary(merged + "/comparison.json"), StableSummary(whole + "/comparison.json"));
}

TEST_F(RunIntegrationTest, JournalFromAnotherDatasetIsRejected) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(1, {}));
  // Another dataset: the first three records of the sample (a temporary file of the test).
  const std::vector<std::string> records = Lines(ReadText(dataset_));
  ASSERT_GE(records.size(), 3u);
  const std::string small = dir_ + "/small.jsonl";
  HB_ASSERT_OK(WriteFileAtomically(
      small, absl::StrCat(records[0], "\n", records[1], "\n", records[2], "\n")));
  const std::string out = dir_ + "/out";
  ASSERT_EQ(RunOrchestrator({"run", "--dataset=" + small,
                             "--responses=base=" + WriteResponses(small, "x", dir_ + "/s.jsonl"),
                             "--out=" + out, "--grader=" + cluster->Target(),
                             "--grader-template=" + ReferenceTemplatePath(), "--progress=off"},
                            dir_),
            0);

  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(RunArgs(out, cluster->Target()), dir_, &stderr_text), 2);
  EXPECT_THAT(stderr_text,
              HasSubstr(absl::StrCat("hb-orchestrator run: journal ", out,
                                     "/journal.sqlite belongs to another run: "
                                     "dataset_sha256 is '",
                                     Sha256Hex(ReadText(small)), "' in the journal but '",
                                     Sha256Hex(ReadText(dataset_)),
                                     "' for this run; use another --out folder, or "
                                     "--force-new to move the old journal aside")));

  // --force-new moves the old journal aside and grades from scratch.
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target(), {"--force-new"}), dir_, &stderr_text),
            0);
  EXPECT_THAT(stderr_text, HasSubstr("moved the old journal to " + out + "/journal.sqlite.old-"));
}

TEST_F(RunIntegrationTest, BadUsageExitsWithTwo) {
  std::string stderr_text;
  EXPECT_EQ(
      RunOrchestrator({"run", "--dataset=" + dataset_, "--out=" + dir_ + "/o"}, dir_, &stderr_text),
      2);
  EXPECT_THAT(stderr_text, HasSubstr("no --responses or --policy given"));
  EXPECT_THAT(stderr_text, HasSubstr("--policy NAME=MODEL@URL"));
  EXPECT_EQ(RunOrchestrator({"run", "--dataset=" + dataset_, "--responses=a b=" + base_,
                             "--out=" + dir_ + "/o"},
                            dir_, &stderr_text),
            2);
  EXPECT_THAT(stderr_text, HasSubstr("checkpoint name 'a b'"));
  EXPECT_EQ(RunOrchestrator({"run", "--dataset=" + dir_ + "/missing.jsonl", "--responses=" + base_,
                             "--out=" + dir_ + "/o", "--grader-template=" + ReferenceTemplatePath(),
                             "--llm-base-url=http://127.0.0.1:1/v1"},
                            dir_, &stderr_text),
            2);
  EXPECT_THAT(stderr_text, HasSubstr(dir_ + "/missing.jsonl"));
}

TEST_F(RunIntegrationTest, FailedRowsExitWithThreeAndAreRetriedNextRun) {
  // An upstream that answers every call with 503: every row fails after its attempts (a
  // retryable failure, so the probe row lets the run go on). Never stopping on same failures:
  // how many rows are sent before 50 have failed depends on the machine's speed.
  HB_ASSERT_OK_AND_ASSIGN(LlmSim failing, hb::testing::StartLlmSim({"--fault-503=1"}));
  const std::string out = dir_ + "/out";
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded",
                                    {"--llm-base-url=" + failing.base_url, "--max-attempts=1",
                                     "--row-attempts=1", "--stop-after-same-failures=0"},
                                    /*two_checkpoints=*/false),
                            dir_, &stderr_text),
            3);
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat(rows_per_checkpoint_, " row(s) failed")));
  EXPECT_THAT(ReadText(out + "/base/failures.jsonl"), HasSubstr("UNAVAILABLE"));
  // With a grader, the next run grades exactly the failed rows.
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(1, {}));
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target(), {}, /*two_checkpoints=*/false), dir_,
                            &stderr_text),
            0);
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat("0 already graded in the journal, ",
                                                  rows_per_checkpoint_, " to grade")));
  EXPECT_EQ(ReadText(out + "/base/failures.jsonl"), "");
}

// Rows failing alike stop the dispatch after --stop-after-same-failures of them; the rest stay
// for the next run, and the most frequent reasons are printed.
TEST_F(RunIntegrationTest, SameFailuresStopDispatchingAndTheTopReasonsArePrinted) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim failing, hb::testing::StartLlmSim({"--fault-503=1"}));
  const std::string out = dir_ + "/out";
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded",
                                    {"--llm-base-url=" + failing.base_url, "--max-attempts=1",
                                     "--row-attempts=1", "--max-in-flight=1",
                                     "--noadaptive-concurrency", "--stop-after-same-failures=5"},
                                    /*two_checkpoints=*/false),
                            dir_, &stderr_text),
            3);
  // The probe row, then 5 rows of the rest.
  EXPECT_THAT(stderr_text,
              HasSubstr(absl::StrCat("hb-orchestrator run: stopped dispatching: the last 5 "
                                     "finished rows all failed with UNAVAILABLE (last: ")));
  EXPECT_THAT(stderr_text,
              HasSubstr(absl::StrCat("; ", rows_per_checkpoint_ - 6, " row(s) not sent\n")));
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: most frequent failure reasons:\n"
                                     "  6 x UNAVAILABLE: "));
  EXPECT_EQ(JournalRows(out + "/journal.sqlite"), 6);
}

// A gRPC target with no replica listening: exit 2 within seconds, rows never sent.
TEST_F(RunIntegrationTest, UnreachableGraderExitsWithTwoAtOnce) {
  const std::string out = dir_ + "/out";
  std::string stderr_text;
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "ipv4:127.0.0.1:1", {}, /*two_checkpoints=*/false), dir_,
                            &stderr_text),
            2);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: no hb-grader replica reachable at "
                                     "ipv4:127.0.0.1:1 within 5s: "));
  EXPECT_THAT(stderr_text, Not(HasSubstr("Run the same command again")));
}

// An embedded grader (online or batch) whose upstream cannot be called is refused before
// anything is read, created or sent, with the reason and the fix: no key for a remote https
// endpoint (here the default, OpenAI's), or a host that does not resolve (.invalid never does).
TEST_F(RunIntegrationTest, AnUpstreamWithoutKeyOrAddressExitsWithTwoAtOnce) {
  const std::string out = dir_ + "/out";
  const std::vector<std::string> no_key = {"OPENAI_API_KEY="};
  for (const std::string& mode : {std::string("online"), std::string("batch")}) {
    SCOPED_TRACE(mode);
    std::string stderr_text;
    const absl::Time start = absl::Now();
    EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded", {"--grader-mode=" + mode}), dir_,
                              &stderr_text, no_key),
              2);
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    // (After the SIMULATED banner of --simulated-verdicts.)
    EXPECT_THAT(
        stderr_text,
        HasSubstr(
            "\nhb-orchestrator run: no API key for https://api.openai.com/v1 (the default "
            "--llm-base-url): set $OPENAI_API_KEY or --llm-api-key-file, or give "
            "--llm-base-url a server that needs none (on this machine, or plain http:// inside "
            "the cluster: vLLM, hb-llm-sim); an https server that takes no key accepts any "
            "placeholder key\n"));
  }
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded",
                                    {"--llm-base-url=http://hb-preflight-test.invalid:8000/v1"}),
                            dir_, &stderr_text, no_key),
            2);
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: cannot resolve host "
                                     "'hb-preflight-test.invalid' of --llm-base-url "
                                     "http://hb-preflight-test.invalid:8000/v1: "));
  EXPECT_THAT(stderr_text, HasSubstr(". Check the host name in --llm-base-url, and this "
                                     "machine's DNS and network (no request was sent)\n"));
  struct stat st;
  EXPECT_NE(::stat(out.c_str(), &st), 0) << "the run created its output folder";
}

// An --out that cannot be written is refused before any request, naming it and the fix.
TEST_F(RunIntegrationTest, AnOutThatCannotBeWrittenExitsWithTwoAtOnce) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim,
                          hb::testing::StartLlmSim({"--request-log=" + dir_ + "/requests.log"}));
  HB_ASSERT_OK(WriteFileAtomically(dir_ + "/file", ""));
  std::string stderr_text;
  EXPECT_EQ(
      RunOrchestrator(RunArgs(dir_ + "/file/out", "embedded", {"--llm-base-url=" + sim.base_url}),
                      dir_, &stderr_text),
      2);
  EXPECT_THAT(stderr_text,
              HasSubstr(absl::StrCat("hb-orchestrator run: --out ", dir_,
                                     "/file/out: cannot create directory ", dir_,
                                     "/file/out: Not a directory; give --out a path this user "
                                     "can write (or create the folder with write permission "
                                     "first)\n")));
  EXPECT_EQ(ReadText(dir_ + "/requests.log"), "");
}

// An upstream that answers 401 (a wrong key): the run stops at once with exit 2 and the reason.
// Embedded, the start-up probe sees it before any row; through a replica, the probe row fails
// with a final error and is journaled like any other.
TEST_F(RunIntegrationTest, UpstreamUnauthorizedExitsWithTwoAfterOneRow) {
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({"--api-key=the-right-key"}));
  for (const std::string& grader : {std::string("embedded"), std::string("grpc")}) {
    SCOPED_TRACE(grader);
    const std::string out = dir_ + "/out-" + grader;
    std::vector<std::string> args =
        RunArgs(out, "embedded", {"--llm-base-url=" + sim.base_url}, /*two_checkpoints=*/false);
    std::unique_ptr<ChildProcess> replica;
    if (grader == "grpc") {
      // A replica whose upstream rejects its key.
      HB_ASSERT_OK_AND_ASSIGN(
          replica, ChildProcess::Spawn(
                       {BinaryDir() + "/grader_service/hb-grader", "--listen=127.0.0.1:0",
                        "--metrics-listen=", "--llm-base-url=" + sim.base_url,
                        "--grader-template=" + ReferenceTemplatePath(), "--log-level=warn"}));
      HB_ASSERT_OK_AND_ASSIGN(std::string line, replica->ReadFirstLine(absl::Seconds(30)));
      args = RunArgs(out, "ipv4:127.0.0.1" + line.substr(line.rfind(':')), {},
                     /*two_checkpoints=*/false);
    }
    std::string stderr_text;
    const absl::Time start = absl::Now();
    EXPECT_EQ(RunOrchestrator(args, dir_, &stderr_text), 2);
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    EXPECT_THAT(stderr_text, Not(HasSubstr("Run the same command again")));
    if (grader == "embedded") {
      // The start-up probe (GET /models) is refused: no grading request, no row.
      EXPECT_THAT(stderr_text, HasSubstr("answered HTTP 401: "));
      EXPECT_THAT(stderr_text, HasSubstr("The judge refused the API key: check $OPENAI_API_KEY or "
                                         "--llm-api-key-file"));
      EXPECT_EQ(JournalRows(out + "/journal.sqlite"), 0);
      continue;
    }
    // A replica's upstream is the replica's: the first row shows the refusal.
    EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: the grader cannot grade: "));
    EXPECT_THAT(stderr_text, HasSubstr("upstream HTTP 401: "));
    EXPECT_THAT(stderr_text,
                HasSubstr("check --llm-api-key-file / OPENAI_API_KEY and --llm-base-url"));
    EXPECT_EQ(JournalRows(out + "/journal.sqlite"), 1);
  }
}

// A second run on the same --out while the first is running fails at once naming the holder.
TEST_F(RunIntegrationTest, ASecondRunOnTheSameOutFailsAtOnce) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(1, {"--latency-ms=50"}));
  const std::string out = dir_ + "/out";
  const std::vector<std::string> args =
      RunArgs(out, cluster->Target(), {"--max-in-flight=2"}, /*two_checkpoints=*/false);
  Orch first = SpawnOrchestrator(args, dir_);
  ASSERT_TRUE(WaitForJournalRows(out + "/journal.sqlite", 2, first.pid))
      << ReadText(first.stderr_path);
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(args, dir_, &stderr_text), 2);
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat("hb-orchestrator run: another hb-orchestrator "
                                                  "holds ",
                                                  out, "/.lock (pid ", first.pid, ")")));
  ::kill(first.pid, SIGTERM);
  EXPECT_EQ(WaitExit(first.pid), 4) << ReadText(first.stderr_path);
}

// Tasks without a response (here: an empty responses file) mark the reports INCOMPLETE and
// exit 3, unless --allow-partial-responses accepts partial coverage.
TEST_F(RunIntegrationTest, TasksWithoutResponseAreIncompleteUnlessAllowed) {
  const std::string empty = dir_ + "/empty.jsonl";
  HB_ASSERT_OK(WriteFileAtomically(empty, ""));
  std::vector<std::string> args = {"run",
                                   "--dataset=" + dataset_,
                                   "--responses=base=" + empty,
                                   "--out=" + dir_ + "/out",
                                   "--grader=ipv4:127.0.0.1:1",
                                   "--grader-template=" + ReferenceTemplatePath(),
                                   "--progress=off"};
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(args, dir_, &stderr_text), 3);
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: base: 30 task(s) have no response; "
                                     "the reports are marked INCOMPLETE"));
  EXPECT_THAT(ReadText(dir_ + "/out/base/summary.json"), HasSubstr("\"incomplete\": true"));

  args.push_back("--allow-partial-responses");
  EXPECT_EQ(RunOrchestrator(args, dir_, &stderr_text), 0);
  EXPECT_THAT(stderr_text,
              HasSubstr("base: 30 task(s) have no response (accepted: --allow-partial-responses)"));
  EXPECT_THAT(ReadText(dir_ + "/out/base/summary.json"), Not(HasSubstr("\"incomplete\": true")));
}

// A 0-byte journal is an error naming it (exit 2), not a silent fresh start.
TEST_F(RunIntegrationTest, AnEmptyJournalExitsWithTwo) {
  const std::string out = dir_ + "/out";
  HB_ASSERT_OK(MakeDirs(out));
  HB_ASSERT_OK(WriteFileAtomically(out + "/journal.sqlite", ""));
  std::string stderr_text;
  // The grader is connected first (the journal records what it grades with): embedded, so no
  // replica is needed; nothing is sent upstream.
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded", {"--llm-base-url=http://127.0.0.1:1/v1"},
                                    /*two_checkpoints=*/false),
                            dir_, &stderr_text),
            2);
  EXPECT_THAT(stderr_text, HasSubstr("hb-orchestrator run: journal " + out +
                                     "/journal.sqlite is empty (0 bytes)"));
}

TEST_F(RunIntegrationTest, GradersThatDisagreeAreRefusedNamingBothReplicas) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster,
                          StartCluster(2, {}, {}, {{}, {"--llm-model=other-model"}}));
  std::string err;
  EXPECT_EQ(RunOrchestrator(RunArgs(dir_ + "/out", cluster->Target()), dir_, &err), 2);
  EXPECT_THAT(err, HasSubstr(absl::StrCat(
                       "graders disagree on model: replica ipv4:127.0.0.1:", cluster->ports[0],
                       " has 'gpt-4.1-2025-04-14', replica ipv4:127.0.0.1:", cluster->ports[1],
                       " has 'other-model'")));
  EXPECT_THAT(err, HasSubstr("start every hb-grader replica with the same --llm-model"));
  EXPECT_EQ(JournalRows(dir_ + "/out/journal.sqlite"), 0);
}

// The reports record the replicas' settings, not this command's defaults (gpt-4.1 at 0.5; an
// explicit --llm-model that differs from the replicas' is refused: judge_checks_integration_test).
TEST_F(RunIntegrationTest, ProvenanceRecordsWhatTheGradersGradeWith) {
  HB_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Cluster> cluster,
      StartCluster(2, {},
                   std::vector<std::string>{"--llm-model=grader-side", "--llm-temperature=0.25"}));
  const std::string out = dir_ + "/out";
  std::string err;
  ASSERT_EQ(
      RunOrchestrator(RunArgs(out, cluster->Target(), {"--examples=2"}, /*two_checkpoints=*/false),
                      dir_, &err),
      0)
      << err;
  rapidjson::Document summary;
  summary.Parse(ReadText(out + "/base/summary.json").c_str());
  ASSERT_FALSE(summary.HasParseError());
  const rapidjson::Value& grader = summary["provenance"]["grader"];
  EXPECT_STREQ(grader["model"].GetString(), "grader-side");
  EXPECT_EQ(grader["temperature"].GetDouble(), 0.25);
  EXPECT_STREQ(grader["upstream_base_url"].GetString(), cluster->sim.base_url.c_str());
  EXPECT_STRNE(grader["version"].GetString(), "");
  ASSERT_EQ(grader["replicas"].Size(), 2u);
  EXPECT_EQ(std::string(grader["replicas"][0].GetString()),
            absl::StrCat("ipv4:127.0.0.1:", cluster->ports[0]));
  EXPECT_EQ(summary["provenance"]["shard"]["count"].GetInt(), 1);
  EXPECT_THAT(ReadText(out + "/base/summary.json"), Not(HasSubstr("orchestrator-flag")));
}

TEST_F(RunIntegrationTest, CredentialsInTheBaseUrlNeverReachLogsOrReports) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(0, {}));
  const std::string url =
      absl::StrReplaceAll(cluster->sim.base_url, {{"http://", "http://alice:pa55word@"}});
  const std::string out = dir_ + "/out";
  std::string err;
  ASSERT_EQ(RunOrchestrator(RunArgs(out, "embedded", {"--llm-base-url=" + url, "--examples=2"},
                                    /*two_checkpoints=*/false),
                            dir_, &err),
            0)
      << err;
  EXPECT_THAT(err, HasSubstr("http://[redacted]@127.0.0.1:"));  // the upstream is logged...
  for (const std::string& text :
       {err, ReadText(out + "/base/summary.json"), ReadText(out + "/base/report.html")}) {
    EXPECT_THAT(text, Not(HasSubstr("pa55word")));  // ...never its credentials
  }
  EXPECT_THAT(ReadText(out + "/base/summary.json"), HasSubstr("http://[redacted]@127.0.0.1:"));
}

TEST_F(RunIntegrationTest, SigtermWritesIncompleteReportsAndExitsWithFour) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Cluster> cluster, StartCluster(1, {"--latency-ms=50"}));
  const std::string out = dir_ + "/out";
  Orch orch = SpawnOrchestrator(
      RunArgs(out, cluster->Target(), {"--max-in-flight=4"}, /*two_checkpoints=*/false), dir_);
  ASSERT_TRUE(WaitForJournalRows(out + "/journal.sqlite", 20, orch.pid))
      << ReadText(orch.stderr_path);
  ::kill(orch.pid, SIGTERM);
  EXPECT_EQ(WaitExit(orch.pid), 4) << ReadText(orch.stderr_path);
  EXPECT_THAT(ReadText(orch.stderr_path), HasSubstr("SIGTERM received: stopping"));
  EXPECT_THAT(ReadText(out + "/base/summary.json"), HasSubstr("\"incomplete\": true"));
  const int64_t committed = JournalOkRows(out + "/journal.sqlite");
  EXPECT_EQ(static_cast<int64_t>(VerdictRows(out + "/base/verdicts.jsonl").size()), committed);
}

// ---- --grader-mode batch: the Batch API of hb-llm-sim ---------------------------------------

// (prompt_id, rubric_index) -> (criteria_met, explanation) of verdicts.jsonl.
std::map<std::pair<std::string, int>, std::pair<bool, std::string>> VerdictMap(
    const std::string& path) {
  std::map<std::pair<std::string, int>, std::pair<bool, std::string>> out;
  for (const std::string& line : VerdictRows(path)) {
    rapidjson::Document row;
    row.Parse(line.c_str());
    if (row.HasParseError()) continue;
    out[{row["prompt_id"].GetString(), row["rubric_index"].GetInt()}] = {
        row["criteria_met"].GetBool(), row["explanation"].GetString()};
  }
  return out;
}

// Batches the journal holds as submitted (created upstream, not yet recorded).
int64_t SubmittedBatches(const std::string& journal) {
  return CountJournalTable(journal, "batches", "state = 'submitted'");
}

// The request bodies of dry-run's output, by "<prompt_id>/<rubric_index>".
std::map<std::string, std::string> DryRunBodies(const std::string& path) {
  std::map<std::string, std::string> bodies;
  for (const std::string& line : Lines(ReadText(path))) {
    rapidjson::Document row;
    row.Parse(line.c_str());
    rapidjson::StringBuffer body;
    rapidjson::Writer<rapidjson::StringBuffer> writer(body);
    row["request"].Accept(writer);
    bodies[absl::StrCat(row["prompt_id"].GetString(), "/", row["rubric_index"].GetInt())] =
        body.GetString();
  }
  return bodies;
}

class BatchIntegrationTest : public RunIntegrationTest {
 protected:
  std::vector<std::string> BatchArgs(const std::string& out, const hb::testing::LlmSim& sim,
                                     std::vector<std::string> extra = {}) const {
    std::vector<std::string> args =
        RunArgs(out, "embedded",
                {"--grader-mode=batch", "--llm-base-url=" + sim.base_url,
                 "--batch-poll-interval=50ms", "--backoff-base=10ms"},
                /*two_checkpoints=*/false);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
};

// The same rows through the Batch API give the online run's verdicts, bit for bit; the input
// files hold exactly dry-run's request bodies, split at --batch-max-requests.
TEST_F(BatchIntegrationTest, BatchVerdictsEqualOnlineVerdictsAndBodiesEqualDryRun) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--batch-completion-delay=100ms"}));
  const std::string online = dir_ + "/online";
  const std::string batch = dir_ + "/batch";
  ASSERT_EQ(RunOrchestrator(RunArgs(online, "embedded", {"--llm-base-url=" + sim.base_url},
                                    /*two_checkpoints=*/false),
                            dir_),
            0);
  std::string stderr_text;
  ASSERT_EQ(
      RunOrchestrator(BatchArgs(batch, sim, {"--batch-max-requests=100"}), dir_, &stderr_text), 0);
  const auto online_verdicts = VerdictMap(online + "/base/verdicts.jsonl");
  EXPECT_EQ(online_verdicts.size(), rows_per_checkpoint_);
  EXPECT_EQ(VerdictMap(batch + "/base/verdicts.jsonl"), online_verdicts);
  EXPECT_EQ(CheckVerdictsMatchSimulator(batch, "base", base_), rows_per_checkpoint_);
  EXPECT_EQ(ReadText(online + "/base/tasks.jsonl"), ReadText(batch + "/base/tasks.jsonl"));
  const int64_t files = (static_cast<int64_t>(rows_per_checkpoint_) + 99) / 100;
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), files);
  EXPECT_EQ(SimCounter(sim, "hb_sim_batch_requests_total"),
            static_cast<int64_t>(rows_per_checkpoint_));
  EXPECT_THAT(stderr_text, HasSubstr("at batch price (x0.5)"));
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat("; ", rows_per_checkpoint_,
                                                  " row(s) through the Batch API at x0.5")));
  // The dollars each run reports itself: the batch run's tokens at half the online prices.
  for (const std::string& run : {online, batch}) {
    rapidjson::Document summary;
    summary.Parse(ReadText(run + "/base/summary.json").c_str());
    ASSERT_FALSE(summary.HasParseError()) << run;
    const rapidjson::Value& usage = summary["usage"];
    const double factor = run == batch ? 0.5 : 1.0;
    const double uncached = usage["prompt_tokens"].GetDouble() - usage["cached_tokens"].GetDouble();
    const double dollars = (uncached * 2.0 + usage["cached_tokens"].GetDouble() * 0.5 +
                            usage["completion_tokens"].GetDouble() * 8.0) /
                           1e6;
    EXPECT_GT(dollars, 0) << run;
    EXPECT_NEAR(usage["cost_usd"].GetDouble(), dollars * factor, 1e-9) << run;
    EXPECT_EQ(usage["batch_rows"].GetInt64(),
              run == batch ? static_cast<int64_t>(rows_per_checkpoint_) : 0)
        << run;
  }

  // Every input line's body is the line dry-run prints for the same row.
  ASSERT_EQ(RunOrchestrator(
                {"dry-run", "--dataset=" + dataset_, "--responses=" + base_,
                 "--out=" + dir_ + "/dry.jsonl", "--grader-template=" + ReferenceTemplatePath()},
                dir_),
            0);
  const std::map<std::string, std::string> dry = DryRunBodies(dir_ + "/dry.jsonl");
  size_t compared = 0;
  for (int64_t f = 1; f <= files; ++f) {
    const std::string path = absl::StrFormat("%s/batch/batch-%06d.jsonl", batch, f);
    const std::vector<std::string> lines = Lines(ReadText(path));
    EXPECT_LE(lines.size(), 100u) << path;
    for (const std::string& line : lines) {
      rapidjson::Document row;
      row.Parse(line.c_str());
      ASSERT_FALSE(row.HasParseError()) << line;
      EXPECT_EQ(std::string(row["url"].GetString()), "/v1/chat/completions");
      rapidjson::StringBuffer body;
      rapidjson::Writer<rapidjson::StringBuffer> writer(body);
      row["body"].Accept(writer);
      const std::string key = row["custom_id"].GetString();  // "base/<prompt_id>/<index>"
      EXPECT_EQ(body.GetString(), dry.at(key.substr(key.find('/') + 1))) << key;
      ++compared;
    }
  }
  EXPECT_EQ(compared, rows_per_checkpoint_);
}

// simple-evals PR #108's grader (gpt-5.4 at low effort, the Responses API) on the real records,
// online and through the Batch API's /v1/responses: the same grader prompts as the chat path,
// the same simulator verdicts, the same scores; reasoning tokens billed as output.
TEST_F(BatchIntegrationTest, ResponsesGraderGradesExactlyWhatTheChatGraderGrades) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--batch-completion-delay=100ms"}));
  const std::vector<std::string> gpt54 = {"--llm-model=gpt-5.4-2026-03-05",
                                          "--llm-reasoning-effort=low"};
  const std::string chat = dir_ + "/chat";
  const std::string online = dir_ + "/responses";
  const std::string batch = dir_ + "/responses-batch";
  std::vector<std::string> online_args = gpt54;
  online_args.push_back("--llm-base-url=" + sim.base_url);
  ASSERT_EQ(
      RunOrchestrator(RunArgs(chat, "embedded", {"--llm-base-url=" + sim.base_url}, false), dir_),
      0);
  ASSERT_EQ(RunOrchestrator(RunArgs(online, "embedded", online_args, false), dir_), 0);
  ASSERT_EQ(RunOrchestrator(BatchArgs(batch, sim, gpt54), dir_), 0);
  // The journal knows its grader's API: the same model through chat completions does not
  // resume the Responses run.
  std::string refused;
  EXPECT_NE(RunOrchestrator(RunArgs(online, "embedded",
                                    {"--llm-base-url=" + sim.base_url,
                                     "--llm-model=gpt-5.4-2026-03-05", "--llm-api=chat"},
                                    false),
                            dir_, &refused),
            0);
  EXPECT_THAT(refused, HasSubstr("grader_api is 'responses' in the journal but not set"));
  const auto chat_verdicts = VerdictMap(chat + "/base/verdicts.jsonl");
  EXPECT_EQ(chat_verdicts.size(), rows_per_checkpoint_);
  for (const std::string& run : {online, batch}) {
    EXPECT_EQ(VerdictMap(run + "/base/verdicts.jsonl"), chat_verdicts) << run;
    EXPECT_EQ(CheckVerdictsMatchSimulator(run, "base", base_), rows_per_checkpoint_) << run;
    EXPECT_EQ(ReadText(run + "/base/tasks.jsonl"), ReadText(chat + "/base/tasks.jsonl")) << run;
    rapidjson::Document summary, chat_summary;
    summary.Parse(ReadText(run + "/base/summary.json").c_str());
    chat_summary.Parse(ReadText(chat + "/base/summary.json").c_str());
    EXPECT_EQ(summary["score"].GetDouble(), chat_summary["score"].GetDouble()) << run;
    // The same reply text, plus the simulator's 192 reasoning tokens per low-effort row.
    EXPECT_EQ(summary["usage"]["completion_tokens"].GetInt64(),
              chat_summary["usage"]["completion_tokens"].GetInt64() +
                  192 * static_cast<int64_t>(rows_per_checkpoint_))
        << run;
  }

  // Row for row, the grader prompt in the Responses body is the chat body's user turn, and the
  // body is exactly {model, input, reasoning}.
  for (const auto& [out, flags] : {std::pair{dir_ + "/dry-chat.jsonl", std::vector<std::string>{}},
                                   std::pair{dir_ + "/dry-responses.jsonl", gpt54}}) {
    std::vector<std::string> args = {"dry-run", "--dataset=" + dataset_, "--responses=" + base_,
                                     "--out=" + out,
                                     "--grader-template=" + ReferenceTemplatePath()};
    args.insert(args.end(), flags.begin(), flags.end());
    ASSERT_EQ(RunOrchestrator(args, dir_), 0);
  }
  const auto chat_bodies = DryRunBodies(dir_ + "/dry-chat.jsonl");
  const auto responses_bodies = DryRunBodies(dir_ + "/dry-responses.jsonl");
  ASSERT_EQ(responses_bodies.size(), rows_per_checkpoint_);
  for (const auto& [key, body] : responses_bodies) {
    rapidjson::Document responses_doc, chat_doc;
    responses_doc.Parse(body.c_str());
    chat_doc.Parse(chat_bodies.at(key).c_str());
    EXPECT_EQ(BuildResponsesBody(
                  GraderSettings{"gpt-5.4-2026-03-05", 0.5, 2048, "", GraderApi::kResponses, "low"},
                  chat_doc["messages"][1]["content"].GetString()),
              body)
        << key;
  }

  // The batch input lines: url /v1/responses, bodies exactly dry-run's.
  size_t lines = 0;
  for (const std::string& line : Lines(ReadText(batch + "/batch/batch-000001.jsonl"))) {
    rapidjson::Document row;
    row.Parse(line.c_str());
    EXPECT_EQ(std::string(row["url"].GetString()), "/v1/responses");
    rapidjson::StringBuffer body;
    rapidjson::Writer<rapidjson::StringBuffer> writer(body);
    row["body"].Accept(writer);
    std::string key = row["custom_id"].GetString();
    EXPECT_EQ(body.GetString(), responses_bodies.at(key.substr(key.find('/') + 1))) << key;
    ++lines;
  }
  EXPECT_EQ(lines, rows_per_checkpoint_);
}

// --professional on our synthetic Professional-format file: PR #108's bundle (gpt-5.4, low,
// Responses API, length adjustment 2000 / 0.0147) end to end; a contradicting flag or a
// HealthBench-format file is refused with exit 2 before the simulator sees any request.
TEST_F(RunIntegrationTest, ProfessionalBundleGradesAndRefusesContradictionsBeforeAnyRequest) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim, hb::testing::StartLlmSim({}));
  const std::string dataset =
      hb::testing::SourceDir() + "/tests/common/healthbench/testdata/professional_synthetic.jsonl";
  const std::string responses = dir_ + "/pro.jsonl";
  HB_ASSERT_OK(WriteFileAtomically(
      responses,
      "{\"prompt_id\":\"pro-001\",\"response\":\"Depends on CrCl.\"}\n"
      "{\"prompt_id\":\"2\",\"response\":\"Troponin negative, aspirin. \xC3\xA9\"}\n"
      "{\"prompt_id\":\"pro-003\",\"response\":\"4 g par jour maximum.\"}\n"));
  const auto args = [&](const std::string& out, std::vector<std::string> extra,
                        const std::string& data) {
    std::vector<std::string> a = {"run",
                                  "--dataset=" + data,
                                  "--responses=pro=" + responses,
                                  "--out=" + out,
                                  "--grader-template=" + ReferenceTemplatePath(),
                                  "--llm-base-url=" + sim.base_url,
                                  "--simulated-verdicts",
                                  "--progress=off",
                                  "--professional"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"--llm-model=gpt-4.1-2025-04-14"}, "with --llm-model=gpt-5.4-2026-03-05"},
      {{"--llm-reasoning-effort=medium"}, "with --llm-reasoning-effort=low"},
      {{"--llm-api=chat"}, "with --llm-api=responses"},
      {{"--length-adjustment-center=1000"}, "with --length-adjustment-center=2000"},
      {{"--length-adjustment-penalty-per-500-chars=0.03"},
       "with --length-adjustment-penalty-per-500-chars=0.0147"},
      {{"--llm-temperature=0.5"}, "--llm-temperature cannot be used"},
      {{R"(--llm-extra-body={"response_format":{"type":"json_object"}})"},
       "drop --llm-extra-body (or drop --professional)"},
  };
  for (const auto& [extra, message] : refused) {
    std::string err;
    EXPECT_EQ(RunOrchestrator(args(dir_ + "/refused", extra, dataset), dir_, &err), 2) << extra[0];
    EXPECT_THAT(err, HasSubstr(message)) << extra[0];
  }
  std::string err;
  EXPECT_EQ(RunOrchestrator(args(dir_ + "/refused", {}, dataset_), dir_, &err), 2);
  EXPECT_THAT(err, HasSubstr("--professional needs a HealthBench Professional file"));
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 0);

  const std::string out = dir_ + "/professional";
  ASSERT_EQ(RunOrchestrator(args(out, {}, dataset), dir_), 0);
  EXPECT_EQ(SimCounter(sim, "hb_sim_requests_total"), 7);  // 3 + 2 + 2 rubric items
  rapidjson::Document summary;
  summary.Parse(ReadText(out + "/pro/summary.json").c_str());
  ASSERT_FALSE(summary.HasParseError());
  EXPECT_EQ(summary["metrics"]["overall_score_length_adjusted:n_samples"].GetInt(), 3);
  EXPECT_EQ(summary["provenance"]["length_adjustment"]["center"].GetDouble(), 2000.0);
  EXPECT_EQ(summary["provenance"]["length_adjustment"]["penalty_per_500_chars"].GetDouble(),
            0.0147);
  EXPECT_TRUE(summary["metrics"].HasMember("specialty:cardiology"));
}

// Killed while its batch is in progress, the run resumes polling the same batch: the
// simulator never sees a second batch for the same rows.
TEST_F(BatchIntegrationTest, SigkillWhileABatchIsInProgressThenResumeSubmitsNoSecondBatch) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--batch-completion-delay=3s"}));
  const std::string out = dir_ + "/out";
  Orch orch = SpawnOrchestrator(BatchArgs(out, sim), dir_);
  ASSERT_TRUE(WaitWhileRunning(orch.pid, [&] {
    return SubmittedBatches(out + "/journal.sqlite") > 0;
  })) << ReadText(orch.stderr_path);
  ASSERT_EQ(SubmittedBatches(out + "/journal.sqlite"), 1) << ReadText(orch.stderr_path);
  ::kill(orch.pid, SIGKILL);
  EXPECT_EQ(WaitExit(orch.pid), 128 + SIGKILL);
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 1);
  EXPECT_EQ(JournalOkRows(out + "/journal.sqlite"), 0);

  std::string stderr_text;
  ASSERT_EQ(RunOrchestrator(BatchArgs(out, sim), dir_, &stderr_text), 0);
  EXPECT_THAT(stderr_text, HasSubstr("resuming 1 journaled batch"));
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 1);
  EXPECT_EQ(SimCounter(sim, "hb_sim_batch_files_total"), 1);
  EXPECT_EQ(SimCounter(sim, "hb_sim_batch_requests_total"),
            static_cast<int64_t>(rows_per_checkpoint_));
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
}

// Failed, expired and malformed lines are sent again in follow-up batches within --max-attempts;
// with one attempt they are failed rows (failures.jsonl, exit 3), never verdicts.
TEST_F(BatchIntegrationTest, FailedExpiredAndMalformedLinesAreRetriedWithinTheBudget) {
  const std::vector<std::string> faults = {"--batch-completion-delay=50ms",
                                           "--batch-fault-failed=0.1", "--batch-fault-expired=0.1",
                                           "--fault-malformed=0.1", "--seed=7"};
  {
    HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim, hb::testing::StartLlmSim(faults));
    const std::string out = dir_ + "/retried";
    ASSERT_EQ(RunOrchestrator(BatchArgs(out, sim, {"--max-attempts=6"}), dir_), 0);
    EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
    EXPECT_GT(SimCounter(sim, "hb_sim_batches_total"), 1);
    EXPECT_GT(SimCounter(sim, "hb_sim_batch_requests_failed_total"), 0);
  }
  {
    HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim, hb::testing::StartLlmSim(faults));
    const std::string out = dir_ + "/one-attempt";
    std::string stderr_text;
    ASSERT_EQ(RunOrchestrator(BatchArgs(out, sim, {"--max-attempts=1"}), dir_, &stderr_text), 3);
    EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 1);
    const size_t failed = Lines(ReadText(out + "/base/failures.jsonl")).size();
    const size_t graded = CheckVerdictsMatchSimulator(out, "base", base_);
    EXPECT_GT(failed, 0u);
    EXPECT_EQ(graded + failed, rows_per_checkpoint_);
    EXPECT_THAT(ReadText(out + "/base/failures.jsonl"), HasSubstr("(attempt 1 of 1)"));
  }
}

// --batch-fallback online: what a batch did not answer is graded online, in the same run.
TEST_F(BatchIntegrationTest, FallbackOnlineGradesUnansweredRowsOnline) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--batch-completion-delay=50ms",
                                                    "--batch-fault-expired=0.3", "--seed=3"}));
  const std::string out = dir_ + "/out";
  std::string stderr_text;
  ASSERT_EQ(RunOrchestrator(BatchArgs(out, sim, {"--batch-fallback=online"}), dir_, &stderr_text),
            0);
  EXPECT_THAT(stderr_text, HasSubstr("online (--batch-fallback online)"));
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 1);
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
}

// --batch-cancel cancels the journaled batch in progress and exits 4 with partial reports.
TEST_F(BatchIntegrationTest, BatchCancelCancelsTheBatchInProgress) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--batch-completion-delay=10m"}));
  const std::string out = dir_ + "/out";
  Orch orch = SpawnOrchestrator(BatchArgs(out, sim), dir_);
  ASSERT_TRUE(WaitWhileRunning(orch.pid, [&] {
    return SimCounter(sim, "hb_sim_batches_total") >= 1;
  })) << ReadText(orch.stderr_path);
  ::kill(orch.pid, SIGTERM);
  EXPECT_EQ(WaitExit(orch.pid), 4) << ReadText(orch.stderr_path);
  std::string stderr_text;
  EXPECT_EQ(RunOrchestrator(BatchArgs(out, sim, {"--batch-cancel"}), dir_, &stderr_text), 4);
  EXPECT_THAT(stderr_text, HasSubstr(": cancelled"));
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_cancelled_total"), 1);
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 1);
}

// A Batch API that refuses the key, or that nobody answers, fails in seconds with exit 2.
TEST_F(BatchIntegrationTest, UnauthorizedOrUnreachableBatchEndpointExitsWithTwo) {
  HB_ASSERT_OK_AND_ASSIGN(hb::testing::LlmSim sim,
                          hb::testing::StartLlmSim({"--api-key=sk-right"}));
  std::string stderr_text;
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunOrchestrator(BatchArgs(dir_ + "/unauthorized", sim), dir_, &stderr_text), 2);
  EXPECT_THAT(stderr_text, HasSubstr("the Batch API refused GET /batches"));
  EXPECT_THAT(stderr_text, HasSubstr("HTTP 401"));
  EXPECT_THAT(stderr_text, HasSubstr("check the API key"));
  hb::testing::LlmSim nobody;
  nobody.base_url = "http://127.0.0.1:1/v1";
  EXPECT_EQ(RunOrchestrator(BatchArgs(dir_ + "/unreachable", nobody), dir_, &stderr_text), 2);
  EXPECT_THAT(stderr_text, HasSubstr("cannot reach the Batch API at http://127.0.0.1:1/v1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
  EXPECT_EQ(SimCounter(sim, "hb_sim_batches_total"), 0);
}

// --verdict-cache: a second run over the same replies makes no upstream request at all and
// writes the same scores; its reports say every verdict came from the cache and what it saved.
TEST_F(RunIntegrationTest, VerdictCacheRerunMakesNoUpstreamRequest) {
  const std::string log = dir_ + "/requests.jsonl";
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim({"--request-log=" + log}));
  const std::vector<std::string> flags = {"--llm-base-url=" + sim.base_url,
                                          "--verdict-cache=" + dir_ + "/verdicts.sqlite"};
  const std::string first = dir_ + "/first";
  ASSERT_EQ(RunOrchestrator(RunArgs(first, "embedded", flags), dir_), 0);
  const int64_t graded = LoggedRequests(log);
  EXPECT_EQ(graded, static_cast<int64_t>(2 * rows_per_checkpoint_));
  EXPECT_EQ(ExpectFromCache(first + "/base/verdicts.jsonl", false), rows_per_checkpoint_);

  const std::string second = dir_ + "/second";
  std::string stderr_text;
  ASSERT_EQ(RunOrchestrator(RunArgs(second, "embedded", flags), dir_, &stderr_text), 0);
  EXPECT_EQ(LoggedRequests(log), graded);  // zero upstream requests
  ExpectSameReports(first, second, {"base", "tuned"});
  EXPECT_EQ(StableSummary(first + "/comparison.json"), StableSummary(second + "/comparison.json"));
  for (const char* c : {"base", "tuned"}) {
    EXPECT_EQ(ExpectFromCache(second + "/" + c + "/verdicts.jsonl", true), rows_per_checkpoint_);
    const rapidjson::Document paid = Usage(first + "/" + c + "/summary.json");
    const rapidjson::Document cached = Usage(second + "/" + c + "/summary.json");
    ASSERT_TRUE(paid.IsObject() && cached.IsObject()) << c;
    EXPECT_EQ(cached["from_cache_rows"].GetInt64(), static_cast<int64_t>(rows_per_checkpoint_));
    EXPECT_EQ(cached["prompt_tokens"].GetInt64(), 0);
    EXPECT_EQ(cached["cost_usd"].GetDouble(), 0.0);
    EXPECT_EQ(cached["saved_tokens"]["prompt_tokens"].GetInt64(), paid["prompt_tokens"].GetInt64());
    EXPECT_GT(cached["saved_usd"].GetDouble(), 0.0);
    EXPECT_EQ(paid["from_cache_rows"].GetInt64(), 0);
  }
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat("cost $0.00: tokens in 0 (cached 0) out 0")));
  EXPECT_THAT(stderr_text, HasSubstr(absl::StrCat(2 * rows_per_checkpoint_,
                                                  " verdict(s) from the verdict cache saved $")));
  EXPECT_THAT(ReadText(second + "/base/report.html"),
              HasSubstr("rows from the verdict cache saved"));
}

// A self-hosted judge behind a gateway (hb-llm-sim requiring a header and a guided-decoding
// field): --llm-header and --llm-extra-body reach every request, online and through the
// replicas, are recorded as the grader's identity (header values only hashed, shown redacted),
// and a journal or verdict cache filled with this judge answers no other.
constexpr char kGuidedJson[] =
    R"({"guided_json":{"type":"object","properties":{"explanation":{"type":"string"},)"
    R"("criteria_met":{"type":"boolean"}},"required":["explanation","criteria_met"]}})";

TEST_F(RunIntegrationTest, SelfHostedJudgeWithExtraBodyAndHeaderEndToEnd) {
  const std::string log = dir_ + "/requests.jsonl";
  const std::vector<std::string> sim_flags = {"--require-header=api-key=judge-SECRET",
                                              "--require-body-key=guided_json",
                                              "--request-log=" + log};
  HB_ASSERT_OK_AND_ASSIGN(LlmSim sim, hb::testing::StartLlmSim(sim_flags));
  const std::string cache = dir_ + "/verdicts.sqlite";
  const std::vector<std::string> judge = {
      "--llm-base-url=" + sim.base_url, std::string("--llm-extra-body=") + kGuidedJson,
      "--llm-header=api-key=judge-SECRET", "--verdict-cache=" + cache};
  const std::string out = dir_ + "/out";
  std::string err;
  ASSERT_EQ(RunOrchestrator(RunArgs(out, "embedded", judge, /*two_checkpoints=*/false), dir_, &err),
            0)
      << err;
  EXPECT_EQ(CheckVerdictsMatchSimulator(out, "base", base_), rows_per_checkpoint_);
  EXPECT_EQ(LoggedRequests(log), static_cast<int64_t>(rows_per_checkpoint_));
  const std::string summary_text = ReadText(out + "/base/summary.json");
  rapidjson::Document summary;
  summary.Parse(summary_text.c_str());
  ASSERT_FALSE(summary.HasParseError());
  const rapidjson::Value& grader = summary["provenance"]["grader"];
  ASSERT_TRUE(grader["extra_body"].IsObject());
  EXPECT_TRUE(grader["extra_body"].HasMember("guided_json"));
  ASSERT_EQ(grader["headers"].Size(), 1u);
  EXPECT_STREQ(grader["headers"][0]["name"].GetString(), "api-key");
  EXPECT_STREQ(grader["headers"][0]["value"].GetString(), "[redacted]");
  const std::string report = ReadText(out + "/base/report.html");
  EXPECT_THAT(report, HasSubstr("api-key: [redacted]"));
  EXPECT_THAT(report, HasSubstr("guided_json"));
  for (const std::string& text : {summary_text, report, err}) {
    EXPECT_THAT(text, Not(HasSubstr("judge-SECRET")));
  }

  // Without the header the gateway refuses the start-up probe: exit 2 at once, nothing graded.
  std::vector<std::string> no_header = judge;
  no_header.erase(no_header.begin() + 2);
  no_header.pop_back();  // no cache: the request must reach the simulator
  std::string refused;
  EXPECT_EQ(
      RunOrchestrator(RunArgs(dir_ + "/no-header", "embedded", no_header, false), dir_, &refused),
      2);
  EXPECT_THAT(refused, HasSubstr("answered HTTP 401: {\"error\":{\"message\":\"Missing or wrong "
                                 "header api-key"));

  // The journal of this judge refuses the same judge with another key, naming the flag's field.
  std::vector<std::string> other_key = judge;
  other_key[2] = "--llm-header=api-key=another-SECRET";
  std::string resumed;
  EXPECT_EQ(RunOrchestrator(RunArgs(out, "embedded", other_key, false), dir_, &resumed), 2);
  EXPECT_THAT(resumed, HasSubstr("belongs to another run: grader_headers is 'api-key:"));
  EXPECT_THAT(resumed, Not(HasSubstr("SECRET")));

  // The verdict cache filled by this judge does not answer a judge with another extra body:
  // every row is graded upstream again. The same judge is answered from it entirely.
  const int64_t before = LoggedRequests(log);
  std::vector<std::string> other_body = judge;
  other_body[1] = R"(--llm-extra-body={"guided_json":{"type":"object"},"top_k":1})";
  ASSERT_EQ(RunOrchestrator(RunArgs(dir_ + "/other-body", "embedded", other_body, false), dir_), 0);
  EXPECT_EQ(LoggedRequests(log) - before, static_cast<int64_t>(rows_per_checkpoint_));
  EXPECT_EQ(ExpectFromCache(dir_ + "/other-body/base/verdicts.jsonl", false), rows_per_checkpoint_);
  ASSERT_EQ(RunOrchestrator(RunArgs(dir_ + "/same", "embedded", judge, false), dir_), 0);
  EXPECT_EQ(ExpectFromCache(dir_ + "/same/base/verdicts.jsonl", true), rows_per_checkpoint_);
}

// The same judge behind hb-grader replicas: their GetInfo reports the extra body and the
// headers' names and hashes, the run's provenance records them, and replicas that send another
// header value disagree.
TEST_F(RunIntegrationTest, ReplicasReportTheirExtraBodyAndHeaders) {
  HB_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Cluster> cluster,
      StartCluster(
          2, {"--require-header=api-key=judge-SECRET", "--require-body-key=guided_json"},
          {std::string("--llm-extra-body=") + kGuidedJson, "--llm-header=api-key=judge-SECRET"}));
  const std::string out = dir_ + "/out";
  std::string err;
  ASSERT_EQ(RunOrchestrator(RunArgs(out, cluster->Target(), {"--examples=3"}, false), dir_, &err),
            0)
      << err;
  rapidjson::Document summary;
  summary.Parse(ReadText(out + "/base/summary.json").c_str());
  ASSERT_FALSE(summary.HasParseError());
  const rapidjson::Value& grader = summary["provenance"]["grader"];
  EXPECT_TRUE(grader["extra_body"].HasMember("guided_json"));
  ASSERT_EQ(grader["headers"].Size(), 1u);
  EXPECT_EQ(std::string(grader["headers"][0]["value_sha256"].GetString()),
            Sha256Hex("judge-SECRET"));

  HB_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Cluster> mixed,
      StartCluster(2, {}, {}, {{"--llm-header=api-key=one"}, {"--llm-header=api-key=two"}}));
  std::string disagree;
  EXPECT_EQ(RunOrchestrator(RunArgs(dir_ + "/mixed", mixed->Target(), {}, false), dir_, &disagree),
            2);
  EXPECT_THAT(disagree, HasSubstr("graders disagree on headers"));
  EXPECT_THAT(disagree, HasSubstr("start every hb-grader replica with the same --llm-header"));
}

// Two hb-grader replicas write one cache file at once; a later run finds every verdict in it
// whichever replica graded it.
TEST_F(RunIntegrationTest, GraderReplicasShareOneVerdictCache) {
  const std::string log = dir_ + "/requests.jsonl";
  HB_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Cluster> cluster,
      StartCluster(2, {"--request-log=" + log}, {"--verdict-cache=" + dir_ + "/shared.sqlite"}));
  ASSERT_EQ(RunOrchestrator(RunArgs(dir_ + "/first", cluster->Target()), dir_), 0);
  const int64_t graded = LoggedRequests(log);
  EXPECT_EQ(graded, static_cast<int64_t>(2 * rows_per_checkpoint_));
  ASSERT_EQ(RunOrchestrator(RunArgs(dir_ + "/second", cluster->Target()), dir_), 0);
  EXPECT_EQ(LoggedRequests(log), graded);
  EXPECT_EQ(ExpectFromCache(dir_ + "/second/tuned/verdicts.jsonl", true), rows_per_checkpoint_);
  ExpectSameReports(dir_ + "/first", dir_ + "/second", {"base", "tuned"});
}

// A cache path that cannot be a verdict cache stops the run before any grading (exit 2).
TEST_F(RunIntegrationTest, AnUnusableVerdictCacheFailsAtStartWithTwo) {
  const std::string garbage = dir_ + "/garbage.sqlite";
  HB_ASSERT_OK(WriteFileAtomically(garbage, std::string(8192, 'x')));
  const struct {
    std::string path;
    std::string message;
  } cases[] = {{garbage, "file is not a database"},
               {dir_ + "/missing/folder/cache.sqlite", "unable to open database file"}};
  for (const auto& c : cases) {
    std::string stderr_text;
    const absl::Time start = absl::Now();
    EXPECT_EQ(RunOrchestrator(
                  RunArgs(dir_ + "/out", "embedded",
                          {"--llm-base-url=http://127.0.0.1:1/v1", "--verdict-cache=" + c.path}),
                  dir_, &stderr_text),
              2);
    EXPECT_LT(absl::Now() - start, absl::Seconds(30));
    EXPECT_THAT(stderr_text, HasSubstr("--verdict-cache " + c.path));
    EXPECT_THAT(stderr_text, HasSubstr(c.message));
    EXPECT_EQ(JournalOkRows(dir_ + "/out/journal.sqlite"), 0);
  }
}

}  // namespace
}  // namespace hb
