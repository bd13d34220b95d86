// Sharded grading that merges by itself: `run --merge-when-complete` and
// `merge --when-complete`, with real processes (hb-orchestrator, its embedded grader against
// hb-llm-sim) on the shared main sample.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/file.h"
#include "common/healthbench/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::ProcessResult;
using ::hb::testing::ReferenceTemplatePath;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFixedTime[] = "HB_FIXED_TIME=2026-01-01T00:00:00Z";

bool Exists(const std::string& path) { return ReadFile(path).ok(); }

class ShardMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = hb::testing::MakeTempDir();
    out_ = dir_ + "/ckpt";
    HB_ASSERT_OK_AND_ASSIGN(sim_, hb::testing::StartLlmSim({}));
    HB_ASSERT_OK_AND_ASSIGN(Dataset dataset,
                            LoadDataset(hb::testing::SharedDataFile(hb::testing::kMainHead30), {}));
    std::string text;
    for (const Example& e : dataset.examples) {
      absl::StrAppend(&text, "{\"prompt_id\":\"", e.prompt_id, "\",\"response\":\"A reply.\"}\n");
    }
    ASSERT_THAT(WriteFileAtomically(dir_ + "/base.jsonl", text), ::hb::testing::IsOk());
  }

  ProcessResult Orchestrator(const std::vector<std::string>& args,
                             const std::string& time = kFixedTime) {
    std::vector<std::string> argv = {BinaryDir() + "/orchestrator/hb-orchestrator"};
    argv.insert(argv.end(), args.begin(), args.end());
    return ::hb::testing::RunProcess(argv, {time});
  }

  // Shard `index` of 2 of checkpoint "base" into out_/shard-<index>.
  ProcessResult Shard(int index, bool merge, const std::string& time = kFixedTime) {
    std::vector<std::string> args = {
        "run",
        "--dataset=" + hb::testing::SharedDataFile(hb::testing::kMainHead30),
        "--responses=base=" + dir_ + "/base.jsonl",
        "--out=" + out_,
        "--grader=embedded",
        "--llm-base-url=" + sim_.base_url,
        "--grader-template=" + ReferenceTemplatePath(),
        "--simulated-verdicts",
        "--progress=off",
        "--shard-count=2",
        absl::StrCat("--shard-index=", index)};
    if (merge) args.push_back("--merge-when-complete");
    return Orchestrator(args, time);
  }

  ProcessResult MergeWhenComplete() {
    return Orchestrator({"merge", "--when-complete", "--out=" + out_ + "/merged", out_ + "/shard-0",
                         out_ + "/shard-1"});
  }

  std::string dir_, out_;
  hb::testing::LlmSim sim_;
};

TEST_F(ShardMergeTest, TheLastShardToCompleteMergesOnceAndAgainIsANoOp) {
  const ProcessResult first = Shard(0, /*merge=*/true);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("merge: not merging yet: 1 of 2 shard folders hold no complete "
                                   "run: " +
                                   out_ + "/shard-1 (no base/summary.json yet)"));
  EXPECT_FALSE(Exists(out_ + "/merged/base/summary.json"));

  const ProcessResult last = Shard(1, /*merge=*/true);
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_THAT(last.out, HasSubstr("merge: base: 2 shards, 30 of 30 tasks graded"));
  HB_ASSERT_OK_AND_ASSIGN(std::string summary, ReadFile(out_ + "/merged/base/summary.json"));
  EXPECT_THAT(summary, HasSubstr("\"incomplete\": false"));
  ASSERT_TRUE(Exists(out_ + "/merged/merged-from.sha256"));

  // Same shard outputs: nothing is written again (a deleted report stays deleted).
  ASSERT_EQ(std::remove((out_ + "/merged/base/report.html").c_str()), 0);
  const ProcessResult again = MergeWhenComplete();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("already holds the merge of these 2 shards"));
  EXPECT_FALSE(Exists(out_ + "/merged/base/report.html"));

  // A shard's reports written again (another run of it, later) are merged again.
  ASSERT_EQ(Shard(1, /*merge=*/false, "HB_FIXED_TIME=2026-01-02T00:00:00Z").exit_code, 0);
  const ProcessResult changed = MergeWhenComplete();
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  EXPECT_THAT(changed.out, HasSubstr("merge: base: 2 shards"));
  EXPECT_TRUE(Exists(out_ + "/merged/base/report.html"));
}

TEST_F(ShardMergeTest, AShardMarkedIncompleteHoldsTheMergeBack) {
  ASSERT_EQ(Shard(0, /*merge=*/false).exit_code, 0);
  ASSERT_EQ(Shard(1, /*merge=*/false).exit_code, 0);
  const std::string path = out_ + "/shard-1/base/summary.json";
  HB_ASSERT_OK_AND_ASSIGN(std::string summary, ReadFile(path));
  ASSERT_THAT(summary, HasSubstr("\"incomplete\": false"));
  absl::StrReplaceAll({{"\"incomplete\": false", "\"incomplete\": true"}}, &summary);
  ASSERT_TRUE(WriteFileAtomically(path, summary).ok());
  const ProcessResult held = MergeWhenComplete();
  ASSERT_EQ(held.exit_code, 0) << held.err;
  EXPECT_THAT(held.out, HasSubstr(out_ + "/shard-1 (base is marked incomplete)"));
  EXPECT_FALSE(Exists(out_ + "/merged/base/summary.json"));
}

TEST_F(ShardMergeTest, ConcurrentCallersMergeOnce) {
  ASSERT_EQ(Shard(0, /*merge=*/false).exit_code, 0);
  ASSERT_EQ(Shard(1, /*merge=*/false).exit_code, 0);
  std::vector<ProcessResult> results(4);
  std::vector<std::thread> callers;
  for (ProcessResult& result : results) {
    callers.emplace_back([this, &result] { result = MergeWhenComplete(); });
  }
  for (std::thread& caller : callers) caller.join();
  int merged = 0, no_op = 0;
  for (const ProcessResult& result : results) {
    EXPECT_EQ(result.exit_code, 0) << result.err;
    if (absl::StrContains(result.out, "merge: base: 2 shards")) ++merged;
    if (absl::StrContains(result.out, "already holds the merge")) ++no_op;
  }
  EXPECT_EQ(merged, 1);
  EXPECT_EQ(no_op, 3);
}

TEST_F(ShardMergeTest, MergeWhenCompleteNeedsARunThatSucceeds) {
  // A run that fails (here: bad usage) never merges.
  const ProcessResult bad = Orchestrator({"run", "--out=" + out_, "--merge-when-complete"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, Not(HasSubstr("merge:")));
  EXPECT_FALSE(Exists(out_ + "/merged/.lock"));
}

}  // namespace
}  // namespace hb
