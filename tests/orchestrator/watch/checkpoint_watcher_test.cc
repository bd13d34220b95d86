#include "orchestrator/watch/checkpoint_watcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/watch/watch_journal.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::IsOk;
using ::hb::testing::MakeTempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NaturalLessTest, OrdersStepsByNumber) {
  std::vector<std::string> names = {"step-1000", "step-200",   "step-100", "step-20",
                                    "base",      "step-0100b", "step-100a"};
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return NaturalLess(a, b); });
  EXPECT_THAT(names, ElementsAre("base", "step-20", "step-100", "step-100a", "step-0100b",
                                 "step-200", "step-1000"));
  EXPECT_FALSE(NaturalLess("step-100", "step-100"));
}

TEST(WatchJournalTest, RecordsRoundTripAndATornLastLineIsIgnored) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/" + kWatchJournalFileName;
  WatchRecord graded;
  graded.event = "graded";
  graded.checkpoint = "step-1";
  graded.version = 2;
  graded.responses_sha256 = "r";
  graded.dataset_sha256 = "d";
  graded.grader = "g";
  graded.run_dir = "versions/step-1/v2";
  graded.score = 0.25;
  graded.cost_usd = 0.5;
  {
    HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WatchJournal> journal, WatchJournal::Open(path));
    ASSERT_THAT(journal->Append(graded), IsOk());
  }
  ASSERT_THAT(WriteFileAtomically(path, *ReadFile(path) + "{\"event\":\"gra"), IsOk());
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WatchJournal> journal, WatchJournal::Open(path));
  ASSERT_EQ(journal->records().size(), 1u);
  EXPECT_EQ(journal->records()[0].Key(), "r/d/g");
  EXPECT_EQ(journal->records()[0].score, 0.25);
  EXPECT_EQ(journal->records()[0].version, 2);
  // The torn tail is cut: the next record starts on a line of its own.
  ASSERT_THAT(journal->Append(graded), IsOk());
  EXPECT_EQ(*ReadFile(path),
            absl::StrCat(FormatWatchRecord(graded), "\n", FormatWatchRecord(graded), "\n"));
}

TEST(WatchJournalTest, ABadLineBeforeTheLastIsDataLoss) {
  const std::string path = MakeTempDir() + "/watch.jsonl";
  ASSERT_THAT(WriteFileAtomically(path, "not json\n{}\n"), IsOk());
  EXPECT_THAT(WatchJournal::Open(path).status(),
              hb::testing::StatusIs(absl::StatusCode::kDataLoss, HasSubstr("watch.jsonl:1")));
}

// A checkpoints folder, an OUT folder and a fake grading that records its calls and answers
// from a script (exit code per call; 0 when the script is exhausted). A grading with code 0 or 3
// writes the version's summary.json, as run would.
class CheckpointWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    checkpoints_ = MakeTempDir();
    out_ = MakeTempDir();
  }

  void Land(const std::string& name, const std::string& text, bool ready = true) {
    ASSERT_THAT(MakeDirs(checkpoints_ + "/" + name), IsOk());
    ASSERT_THAT(WriteFileAtomically(checkpoints_ + "/" + name + "/responses.jsonl", text), IsOk());
    if (ready) MarkReady(name);
  }
  void MarkReady(const std::string& name) {
    ASSERT_THAT(WriteFileAtomically(checkpoints_ + "/" + name + "/DONE", ""), IsOk());
  }

  std::unique_ptr<CheckpointWatcher> Open() {
    CheckpointWatcherOptions options;
    options.checkpoints_dir = checkpoints_;
    options.out = out_;
    options.poll_interval = absl::Seconds(30);
    options.dataset_sha256 = "dataset";
    options.grader_fingerprint = "grader";
    options.clock = &clock_;
    options.grade = [this](const CheckpointVersion& v) {
      calls_.push_back(v);
      GradeOutcome outcome;
      outcome.exit_code = script_.empty() ? 0 : script_.front();
      if (!script_.empty()) script_.erase(script_.begin());
      outcome.score = 0.5;
      if (outcome.exit_code == 0 || outcome.exit_code == 3) {
        EXPECT_THAT(MakeDirs(v.run_dir + "/" + v.name), IsOk());
        EXPECT_THAT(WriteFileAtomically(v.run_dir + "/" + v.name + "/summary.json", "{}"), IsOk());
      }
      return outcome;
    };
    options.on_report = [this](const std::vector<std::string>& names) {
      reports_.push_back(names);
    };
    options.on_pending = [this](int64_t pending) { pending_.push_back(pending); };
    options.log = [this](const std::string& line) { log_.push_back(line); };
    absl::StatusOr<std::unique_ptr<CheckpointWatcher>> watcher =
        CheckpointWatcher::Open(std::move(options));
    EXPECT_THAT(watcher.status(), IsOk());
    return watcher.ok() ? *std::move(watcher) : nullptr;
  }

  PassSummary Pass(CheckpointWatcher& watcher) {
    absl::StatusOr<PassSummary> summary = watcher.Pass(stop_);
    EXPECT_THAT(summary.status(), IsOk());
    return summary.ok() ? *summary : PassSummary{};
  }

  std::vector<std::string> CalledNames() const {
    std::vector<std::string> names;
    for (const CheckpointVersion& v : calls_) names.push_back(v.name);
    return names;
  }

  std::string checkpoints_, out_;
  FakeClock clock_;
  std::atomic<bool> stop_{false};
  std::vector<int> script_;
  std::vector<CheckpointVersion> calls_;
  std::vector<std::vector<std::string>> reports_;
  std::vector<int64_t> pending_;
  std::vector<std::string> log_;
};

TEST_F(CheckpointWatcherTest, GradesReadyFoldersOnceInNaturalOrderAndNeverOneWithoutItsMarker) {
  Land("step-1000", "c");
  Land("step-200", "b");
  Land("step-100", "a");
  Land("step-300", "unfinished", /*ready=*/false);
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  const PassSummary first = Pass(*watcher);
  EXPECT_EQ(first.graded, 3);
  EXPECT_EQ(first.exit_code, 0);
  EXPECT_THAT(CalledNames(), ElementsAre("step-100", "step-200", "step-1000"));
  EXPECT_EQ(calls_[0].version, 1);
  EXPECT_EQ(calls_[0].run_dir, out_ + "/versions/step-100/v1");
  EXPECT_EQ(calls_[0].responses_path, checkpoints_ + "/step-100/responses.jsonl");
  // The comparison is asked for over every report so far, in step order.
  EXPECT_THAT(reports_.back(), ElementsAre("step-100", "step-200", "step-1000"));
  // OUT/<name> is the version's report folder.
  EXPECT_THAT(*ReadFile(out_ + "/step-200/summary.json"), "{}");
  // A second pass (the same folders seen again) grades nothing.
  EXPECT_EQ(Pass(*watcher).graded, 0);
  EXPECT_EQ(calls_.size(), 3u);
  MarkReady("step-300");
  EXPECT_EQ(Pass(*watcher).graded, 1);
  EXPECT_THAT(CalledNames(), ElementsAre("step-100", "step-200", "step-1000", "step-300"));
}

TEST_F(CheckpointWatcherTest, ARestartGradesNothingTwiceAndResumesAnUnfinishedVersionInPlace) {
  Land("step-1", "a");
  Land("step-2", "b");
  script_ = {0, 4};  // step-2 interrupted (SIGTERM): not done, no retry delay
  {
    std::unique_ptr<CheckpointWatcher> watcher = Open();
    const PassSummary pass = Pass(*watcher);
    EXPECT_TRUE(pass.interrupted);
    EXPECT_EQ(pass.exit_code, 4);
  }
  ASSERT_EQ(calls_.size(), 2u);
  const std::string interrupted_dir = calls_[1].run_dir;
  calls_.clear();
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  EXPECT_EQ(Pass(*watcher).graded, 1);
  ASSERT_THAT(CalledNames(), ElementsAre("step-2"));
  EXPECT_EQ(calls_[0].run_dir, interrupted_dir);
  EXPECT_EQ(calls_[0].version, 1);
}

TEST_F(CheckpointWatcherTest, ChangedResponsesAreANewVersionBesideTheOld) {
  Land("step-1", "first");
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  Land("step-1", "second, longer");
  Pass(*watcher);
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[1].version, 2);
  EXPECT_EQ(calls_[1].run_dir, out_ + "/versions/step-1/v2");
  EXPECT_NE(calls_[0].responses_sha256, calls_[1].responses_sha256);
  char target[256] = {};
  ASSERT_GT(::readlink((out_ + "/step-1").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_EQ(std::string(target), "versions/step-1/v2/step-1");
  EXPECT_THAT(*ReadFile(out_ + "/versions/step-1/v1/step-1/summary.json"), "{}");
  // A restart knows both.
  calls_.clear();
  std::unique_ptr<CheckpointWatcher> restarted = Open();
  Pass(*restarted);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CheckpointWatcherTest, AFailedCheckpointIsRetriedWithDoublingBackoffCappedAtTenTimes) {
  Land("step-1", "a");
  script_ = {3, 3, 3, 3, 3, 3, 3};
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  const PassSummary failed = Pass(*watcher);
  EXPECT_EQ(failed.failed, 1);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_THAT(log_.back(), HasSubstr("step-1: failed (version 1, exit 3); not done, retried at"));
  // Waits of 30s, 60s, 120s, 240s, then 300s (10x) each.
  for (int wait_s : {30, 60, 120, 240, 300, 300}) {
    const size_t before = calls_.size();
    EXPECT_EQ(watcher->NextPassAt(), clock_.Now() + absl::Seconds(std::min(wait_s, 30)));
    clock_.Advance(absl::Seconds(wait_s - 1));
    Pass(*watcher);
    EXPECT_EQ(calls_.size(), before) << "retried before " << wait_s << "s";
    clock_.Advance(absl::Seconds(1));
    Pass(*watcher);
    EXPECT_EQ(calls_.size(), before + 1) << "not retried after " << wait_s << "s";
  }
  // The script is out of failures: the eighth attempt grades it, and it is done.
  clock_.Advance(absl::Seconds(300));
  EXPECT_EQ(Pass(*watcher).graded, 1);
  EXPECT_EQ(calls_.size(), 8u);
  for (const CheckpointVersion& v : calls_) EXPECT_EQ(v.run_dir, out_ + "/versions/step-1/v1");
}

TEST_F(CheckpointWatcherTest, AFailingCheckpointHoldsUpNoOther) {
  Land("step-1", "a");
  script_ = {3, 0};
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  Land("step-2", "b");
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(Pass(*watcher).graded, 1);
  EXPECT_THAT(CalledNames(), ElementsAre("step-1", "step-2"));
  // The failed one's partial report is in the comparison too (marked incomplete by run).
  EXPECT_THAT(reports_.back(), ElementsAre("step-1", "step-2"));
}

// hb_orchestrator_checkpoints_pending's hook: the ready folders not graded yet, at the start of
// a pass and after each one graded; a failed one stays pending until a retry grades it.
TEST_F(CheckpointWatcherTest, CountsTheReadyCheckpointsNotGradedYet) {
  Land("step-1", "a");
  Land("step-2", "b");
  Land("step-3", "c", /*ready=*/false);
  script_ = {3, 0};
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  EXPECT_THAT(pending_, ElementsAre(2, 1));  // step-1 failed, step-2 graded
  pending_.clear();
  MarkReady("step-3");
  Pass(*watcher);  // step-1 waits for its retry; step-3 is graded
  EXPECT_THAT(pending_, ElementsAre(2, 1));
  pending_.clear();
  clock_.Advance(absl::Seconds(30));
  Pass(*watcher);
  EXPECT_THAT(pending_, ElementsAre(1, 0));
  pending_.clear();
  Pass(*watcher);
  EXPECT_THAT(pending_, ElementsAre(0));
}

TEST_F(CheckpointWatcherTest, StopsBeforeTheNextCheckpoint) {
  Land("step-1", "a");
  Land("step-2", "b");
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  stop_ = true;
  EXPECT_EQ(Pass(*watcher).graded, 0);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CheckpointWatcherTest, AMarkerWithoutResponsesIsSkippedAndLoggedOnce) {
  ASSERT_THAT(MakeDirs(checkpoints_ + "/step-1"), IsOk());
  MarkReady("step-1");
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  Pass(*watcher);
  EXPECT_TRUE(calls_.empty());
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("step-1: has DONE but no responses.jsonl"));
}

TEST_F(CheckpointWatcherTest, FoldersNamedLikeWatchsOwnFilesAreNotCheckpoints) {
  for (const char* name : {"versions", "comparison.json", "watch.jsonl", ".hidden", "a b"}) {
    Land(name, "x");
  }
  Land("step-1", "a");
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  EXPECT_THAT(CalledNames(), ElementsAre("step-1"));
}

TEST_F(CheckpointWatcherTest, AMissingCheckpointsFolderIsLoggedOnceAndPickedUpWhenItAppears) {
  checkpoints_ += "/not-yet";
  std::unique_ptr<CheckpointWatcher> watcher = Open();
  Pass(*watcher);
  Pass(*watcher);
  ASSERT_EQ(log_.size(), 1u);
  EXPECT_THAT(log_[0], HasSubstr("cannot list " + checkpoints_));
  Land("step-1", "a");
  EXPECT_EQ(Pass(*watcher).graded, 1);
}

}  // namespace
}  // namespace hb
