// `hb-orchestrator watch` end to end: the real binary watching a checkpoints folder, grading
// through its embedded grader against hb-llm-sim, with folders landing while it runs, signals,
// kills, a judge outage, changed responses and a second watcher. The data: the 30 real records
// (--examples keeps each checkpoint to a few tasks). Every wait polls files another process
// writes (tests/testing/poll_until.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/healthbench/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/journal_query.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::IsOk;
using ::hb::testing::LlmSim;
using ::hb::testing::MakeTempDir;
using ::hb::testing::MetricsValue;
using ::hb::testing::PollUntil;
using ::hb::testing::QueryJournalInt;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kExamples = 4;

std::string ReadText(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : "";
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

int CountLines(const std::string& path, const std::string& needle) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(ReadText(path), '\n')) {
    if (absl::StrContains(line, needle)) ++n;
  }
  return n;
}

// hb-orchestrator watch as a child process, stderr in a file.
class WatchProcess {
 public:
  WatchProcess(const std::vector<std::string>& args, const std::string& log) : log_(log) {
    std::vector<std::string> argv = {BinaryDir() + "/orchestrator/hb-orchestrator", "watch"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {"HB_FIXED_TIME=2026-12-06T00:00:00Z"};
    for (char** e = environ; *e != nullptr; ++e) {
      if (!absl::StartsWith(*e, "HB_FIXED_TIME=")) env.emplace_back(*e);
    }
    // Everything the child needs is built before fork: it may only exec (other threads of
    // this process could hold the allocator's or the environment's lock at fork time).
    std::vector<char*> c_argv, c_env;
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    for (std::string& e : env) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    const int err_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(err_fd, STDERR_FILENO);
      ::dup2(err_fd, STDOUT_FILENO);
      ::execve(c_argv[0], c_argv.data(), c_env.data());
      ::_exit(127);
    }
    ::close(err_fd);
  }
  ~WatchProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void Signal(int signal) { ::kill(pid_, signal); }
  // The exit code (128 + signal when killed by one); -1 after `timeout` (then killed).
  int Wait(absl::Duration timeout = absl::Seconds(120)) {
    int status = 0;
    const bool exited =
        PollUntil([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited) return -1;
    exited_ = true;
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
  }
  bool Running() {
    int status = 0;
    if (exited_ || ::waitpid(pid_, &status, WNOHANG) != 0) {
      exited_ = true;
      return false;
    }
    return true;
  }
  std::string Log() const { return ReadText(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

class WatchIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    checkpoints_ = dir_ + "/checkpoints";
    out_ = dir_ + "/out";
    dataset_ = hb::testing::SharedDataFile(hb::testing::kMainHead30);
    ASSERT_THAT(MakeDirs(checkpoints_), IsOk());
  }

  void StartSim(const std::vector<std::string>& flags) {
    absl::StatusOr<LlmSim> sim = hb::testing::StartLlmSim(flags);
    ASSERT_THAT(sim.status(), IsOk());
    sim_ = *std::move(sim);
  }

  // Writes DIR/<name>/responses.jsonl (a reply per task naming `flavour`), then the marker.
  void Land(const std::string& name, const std::string& flavour, bool ready = true) {
    absl::StatusOr<Dataset> dataset = LoadDataset(dataset_, {});
    ASSERT_THAT(dataset.status(), IsOk());
    std::string text;
    for (const Example& e : dataset->examples) {
      absl::StrAppend(&text, "{\"prompt_id\": ", JsonQuote(e.prompt_id), ", \"response\": ",
                      JsonQuote(absl::StrCat(flavour, " reply: see a clinician if it persists.")),
                      "}\n");
    }
    const std::string folder = checkpoints_ + "/" + name;
    ASSERT_THAT(MakeDirs(folder), IsOk());
    ASSERT_THAT(WriteFileAtomically(folder + "/responses.jsonl", text), IsOk());
    if (ready) {
      ASSERT_THAT(WriteFileAtomically(folder + "/DONE", ""), IsOk());
    }
  }

  std::vector<std::string> Args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"--dataset=" + dataset_,
                                     "--checkpoints-dir=" + checkpoints_,
                                     "--out=" + out_,
                                     "--examples=" + std::to_string(kExamples),
                                     "--llm-base-url=" + sim_.base_url,
                                     "--grader-template=" + hb::testing::ReferenceTemplatePath(),
                                     "--simulated-verdicts",
                                     "--progress=off"};
    const bool own_interval = std::any_of(extra.begin(), extra.end(), [](const std::string& a) {
      return absl::StartsWith(a, "--poll-interval=");
    });
    if (!own_interval) args.push_back("--poll-interval=1s");
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  std::unique_ptr<WatchProcess> Start(const std::vector<std::string>& extra = {}) {
    return std::make_unique<WatchProcess>(Args(extra),
                                          absl::StrCat(dir_, "/watch-", ++spawned_, ".log"));
  }

  int Once(const std::vector<std::string>& extra = {}, std::string* log = nullptr) {
    std::vector<std::string> args = extra;
    args.push_back("--once");
    WatchProcess once(Args(args), absl::StrCat(dir_, "/once-", ++spawned_, ".log"));
    const int code = once.Wait();
    if (log != nullptr) *log = once.Log();
    if (code != 0) ADD_FAILURE() << "watch --once exited " << code << ":\n" << once.Log();
    return code;
  }

  std::string Journal() const { return out_ + "/watch.jsonl"; }
  int Graded(const std::string& name) const {
    return CountLines(Journal(),
                      absl::StrCat("\"event\":\"graded\",\"checkpoint\":\"", name, "\""));
  }
  int64_t OkRows(const std::string& run_dir) const {
    return QueryJournalInt(run_dir + "/journal.sqlite",
                           "SELECT COUNT(*) FROM rows WHERE status = 'ok'");
  }
  // The checkpoint names of OUT/comparison.json, in its order.
  std::vector<std::string> ComparisonOrder() const {
    rapidjson::Document doc;
    doc.Parse(ReadText(out_ + "/comparison.json").c_str());
    std::vector<std::string> names;
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("checkpoints")) return names;
    for (const auto& c : doc["checkpoints"].GetArray()) {
      if (c.IsObject() && c.HasMember("checkpoint")) names.push_back(c["checkpoint"].GetString());
    }
    return names;
  }

  std::string dir_, checkpoints_, out_, dataset_;
  LlmSim sim_;
  int spawned_ = 0;
};

TEST_F(WatchIntegrationTest, GradesFoldersAsTheyLandInStepOrderAndNeverOneWithoutItsMarker) {
  StartSim({});
  Land("step-1000", "late");
  std::unique_ptr<WatchProcess> watch = Start({"--poll-interval=1h"});  // inotify wakes it
  ASSERT_TRUE(PollUntil([&] { return Graded("step-1000") == 1; })) << watch->Log();
  Land("step-100", "early");
  Land("step-300", "unfinished", /*ready=*/false);
  Land("step-200", "middle");
  ASSERT_TRUE(PollUntil([&] { return ComparisonOrder().size() == 3; })) << watch->Log();
  EXPECT_THAT(ComparisonOrder(), ElementsAre("step-100", "step-200", "step-1000"));
  EXPECT_THAT(ReadText(out_ + "/comparison.html"), HasSubstr("step-1000"));
  for (const char* name : {"step-100", "step-200", "step-1000"}) {
    EXPECT_EQ(Graded(name), 1) << name;
    EXPECT_THAT(ReadText(absl::StrCat(out_, "/", name, "/summary.json")), HasSubstr("\"score\""));
  }
  // The folder without its marker: never queued, no version, no report.
  EXPECT_THAT(watch->Log(), Not(HasSubstr("step-300")));
  EXPECT_FALSE(FileExists(out_ + "/versions/step-300"));
  EXPECT_THAT(watch->Log(), HasSubstr("step-200: queued (version 1"));
  EXPECT_THAT(watch->Log(), HasSubstr("step-200: graded (version 1): score "));
  watch->Signal(SIGTERM);
  EXPECT_EQ(watch->Wait(), 0) << watch->Log();
}

// The port of `--metrics-listen=127.0.0.1:0` from the log's "metrics on http://HOST:PORT" line.
int MetricsPort(const std::string& log) {
  const size_t at = log.find("metrics on http://127.0.0.1:");
  if (at == std::string::npos) return 0;
  const size_t start = at + std::string("metrics on http://127.0.0.1:").size();
  int port = 0;
  return absl::SimpleAtoi(log.substr(start, log.find('/', start) - start), &port) ? port : 0;
}

TEST_F(WatchIntegrationTest, CountsGradedAndFailedCheckpointsOnItsMetricsEndpoint) {
  StartSim({});
  Land("step-1", "a");
  std::unique_ptr<WatchProcess> watch =
      Start({"--metrics-listen=127.0.0.1:0", "--row-attempts=1", "--max-attempts=1"});
  int port = 0;
  ASSERT_TRUE(PollUntil([&] { return (port = MetricsPort(watch->Log())) > 0; })) << watch->Log();
  const std::string graded = "hb_orchestrator_checkpoints_total{state=\"graded\"}";
  const std::string failed = "hb_orchestrator_checkpoints_total{state=\"failed\"}";
  ASSERT_TRUE(PollUntil([&] { return MetricsValue(port, graded) == 1; })) << watch->Log();
  EXPECT_EQ(MetricsValue(port, failed), 0);  // at 0 from the start, before any failure
  EXPECT_GT(MetricsValue(port, "hb_orchestrator_rows_planned_total"), 0);
  const std::string pending = "hb_orchestrator_checkpoints_pending";
  ASSERT_TRUE(PollUntil([&] { return MetricsValue(port, pending) == 0; })) << watch->Log();
  // A judge that refuses every request: the next checkpoint fails and is counted so, and stays
  // pending.
  sim_.process.reset();
  Land("step-2", "b");
  ASSERT_TRUE(PollUntil([&] { return MetricsValue(port, failed) >= 1; })) << watch->Log();
  EXPECT_EQ(MetricsValue(port, graded), 1);
  EXPECT_EQ(MetricsValue(port, pending), 1);
  watch->Signal(SIGTERM);
  EXPECT_EQ(watch->Wait(), 0) << watch->Log();
}

// With a gRPC --grader, a checkpoint is keyed by what the replicas grade with (GetInfo), not by
// watch's own --llm-* flags: replicas that grade otherwise grade it again as a new version.
TEST_F(WatchIntegrationTest, ARemoteGraderIsKeyedByWhatItsReplicasGradeWith) {
  StartSim({});
  Land("step-1", "a");
  absl::StatusOr<hb::testing::GraderReplica> a = hb::testing::StartGrader(sim_, {});
  ASSERT_THAT(a.status(), IsOk());
  ASSERT_EQ(Once({"--grader=" + a->target}), 0);
  EXPECT_EQ(Graded("step-1"), 1);
  absl::StatusOr<hb::testing::GraderReplica> b =
      hb::testing::StartGrader(sim_, {"--llm-max-tokens=1024"});
  ASSERT_THAT(b.status(), IsOk());
  ASSERT_EQ(Once({"--grader=" + b->target}), 0);
  EXPECT_EQ(Graded("step-1"), 2);
  EXPECT_EQ(CountLines(Journal(), "\"version\":2"), 2);  // started and graded as version 2
  // Back on the first grader: that grading is done already.
  ASSERT_EQ(Once({"--grader=" + a->target}), 0);
  EXPECT_EQ(Graded("step-1"), 2);
}

TEST_F(WatchIntegrationTest, GradesEachRowExactlyOnceAcrossSigtermSigkillAndRestarts) {
  const std::string requests = dir_ + "/requests.jsonl";
  StartSim({"--latency-ms=100", "--request-log=" + requests});
  Land("step-1", "only");
  const std::vector<std::string> slow = {"--max-in-flight=2", "--adaptive-concurrency=false"};
  const std::string run_dir = out_ + "/versions/step-1/v1";
  {
    std::unique_ptr<WatchProcess> watch = Start(slow);
    ASSERT_TRUE(PollUntil([&] { return OkRows(run_dir) >= 6; })) << watch->Log();
    watch->Signal(SIGTERM);
    ASSERT_EQ(watch->Wait(), 0) << watch->Log();
    EXPECT_THAT(watch->Log(), HasSubstr("step-1: interrupted (version 1)"));
  }
  EXPECT_EQ(Graded("step-1"), 0);
  // SIGTERM drained what was in flight: every request sent so far is a journaled row.
  const int64_t after_term = OkRows(run_dir);
  EXPECT_EQ(CountLines(requests, "\"status\""), after_term);
  {
    std::unique_ptr<WatchProcess> watch = Start(slow);
    ASSERT_TRUE(PollUntil([&] { return OkRows(run_dir) >= after_term + 6; })) << watch->Log();
    watch->Signal(SIGKILL);
    EXPECT_EQ(watch->Wait(), 128 + SIGKILL);
  }
  EXPECT_EQ(Graded("step-1"), 0);
  const int64_t after_kill = OkRows(run_dir);
  ASSERT_EQ(Once(slow), 0);
  EXPECT_EQ(Graded("step-1"), 1);
  const int64_t rows = OkRows(run_dir);
  EXPECT_GT(rows, after_kill);
  // The kill may lose the answers of the (at most 2) rows in flight; nothing else is re-sent.
  EXPECT_LE(CountLines(requests, "\"status\""), rows + 2);
  EXPECT_THAT(ReadText(out_ + "/step-1/summary.json"), Not(HasSubstr("\"incomplete\": true")));
  // Graded once: another call sends nothing and records nothing.
  const int sent = CountLines(requests, "\"status\"");
  ASSERT_EQ(Once(slow), 0);
  EXPECT_EQ(CountLines(requests, "\"status\""), sent);
  EXPECT_EQ(Graded("step-1"), 1);
}

TEST_F(WatchIntegrationTest, AJudgeOutageLeavesTheCheckpointNotDoneUntilARetryGradesIt) {
  StartSim({"--latency-ms=100"});
  const int port = sim_.port;
  Land("step-1", "only");
  std::unique_ptr<WatchProcess> watch =
      Start({"--max-in-flight=2", "--adaptive-concurrency=false", "--row-attempts=1",
             "--max-attempts=1", "--stop-after-same-failures=3"});
  const std::string run_dir = out_ + "/versions/step-1/v1";
  ASSERT_TRUE(PollUntil([&] { return OkRows(run_dir) >= 4; })) << watch->Log();
  sim_.process.reset();  // the judge goes away mid-checkpoint
  // The log line follows the journal record and the report: after it, all three are there.
  ASSERT_TRUE(PollUntil([&] {
    return absl::StrContains(watch->Log(),
                             "step-1: failed (version 1, exit 3); not done, retried at");
  })) << watch->Log();
  EXPECT_GE(CountLines(Journal(), "\"event\":\"failed\""), 1);
  EXPECT_EQ(Graded("step-1"), 0);
  EXPECT_THAT(ReadText(out_ + "/step-1/summary.json"), HasSubstr("\"incomplete\": true"));
  StartSim({"--listen=127.0.0.1:" + std::to_string(port)});  // the judge is back
  ASSERT_TRUE(PollUntil([&] { return Graded("step-1") == 1; })) << watch->Log();
  EXPECT_THAT(ReadText(out_ + "/step-1/summary.json"), Not(HasSubstr("\"incomplete\": true")));
  watch->Signal(SIGTERM);
  EXPECT_EQ(watch->Wait(), 0) << watch->Log();
}

TEST_F(WatchIntegrationTest, ChangedResponsesAreGradedAgainAsANewVersionAndBothAreKept) {
  StartSim({});
  Land("step-1", "first");
  std::string log;
  ASSERT_EQ(Once({}, &log), 0);
  EXPECT_THAT(log, HasSubstr("step-1: graded (version 1)"));
  const std::string v1_summary = ReadText(out_ + "/versions/step-1/v1/step-1/summary.json");
  Land("step-1", "second");
  ASSERT_EQ(Once({}, &log), 0);
  EXPECT_THAT(log, HasSubstr("step-1: graded (version 2)"));
  EXPECT_EQ(Graded("step-1"), 2);
  EXPECT_EQ(ReadText(out_ + "/versions/step-1/v1/step-1/summary.json"), v1_summary);
  EXPECT_EQ(ReadText(out_ + "/step-1/summary.json"),
            ReadText(out_ + "/versions/step-1/v2/step-1/summary.json"));
  EXPECT_NE(ReadText(out_ + "/step-1/tasks.jsonl"),
            ReadText(out_ + "/versions/step-1/v1/step-1/tasks.jsonl"));
  // Nothing new: nothing graded.
  ASSERT_EQ(Once({}, &log), 0);
  EXPECT_THAT(log, Not(HasSubstr("queued")));
}

TEST_F(WatchIntegrationTest, ASecondWatcherOnTheSameOutExitsTwoWithTheReason) {
  StartSim({});
  std::unique_ptr<WatchProcess> first = Start();
  ASSERT_TRUE(PollUntil([&] { return absl::StrContains(first->Log(), "watching"); }))
      << first->Log();
  std::unique_ptr<WatchProcess> second = Start();
  EXPECT_EQ(second->Wait(), 2);
  EXPECT_THAT(second->Log(), HasSubstr("/.lock"));
  EXPECT_THAT(second->Log(), HasSubstr("pid"));
  EXPECT_TRUE(first->Running());
  first->Signal(SIGTERM);
  EXPECT_EQ(first->Wait(), 0);
}

TEST_F(WatchIntegrationTest, OnceGradesWhatIsReadyAndExitsWithRunsCodes) {
  StartSim({});
  Land("step-2", "b");
  Land("step-10", "c");
  Land("step-3", "unfinished", /*ready=*/false);
  ASSERT_EQ(Once(), 0);
  EXPECT_EQ(Graded("step-2"), 1);
  EXPECT_EQ(Graded("step-10"), 1);
  EXPECT_FALSE(FileExists(out_ + "/versions/step-3"));
  EXPECT_THAT(ComparisonOrder(), ElementsAre("step-2", "step-10"));
  // A judge that answers 503 to every grading request: the checkpoint is not done and --once
  // says so (exit 3, rows failed).
  StartSim({"--fault-503=1"});
  Land("step-20", "d");
  WatchProcess failing(Args({"--once", "--row-attempts=1", "--max-attempts=1"}),
                       dir_ + "/failing.log");
  EXPECT_EQ(failing.Wait(), 3) << failing.Log();
  EXPECT_EQ(Graded("step-20"), 0);
  // A judge that refuses connections: the start-up probe refuses before any row (exit 2, as run).
  sim_.process.reset();
  WatchProcess refused(Args({"--once"}), dir_ + "/refused.log");
  EXPECT_EQ(refused.Wait(), 2) << refused.Log();
  EXPECT_THAT(refused.Log(), HasSubstr("No grading request was sent"));
  EXPECT_EQ(Graded("step-20"), 0);
}

}  // namespace
}  // namespace hb
