// The official subsets and where their files are found (common/healthbench/subsets.h).
#include "common/healthbench/subsets.h"

#include <set>
#include <string>
#include <vector>

#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SubsetsTest, ParsesTheReferencesSubsetNames) {
  EXPECT_THAT(ParseSubset("main"), IsOkAndHolds(Subset::kMain));
  EXPECT_THAT(ParseSubset("hard"), IsOkAndHolds(Subset::kHard));
  EXPECT_THAT(ParseSubset("consensus"), IsOkAndHolds(Subset::kConsensus));
  EXPECT_THAT(ParseSubset("Hard"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "--subset: expected main, hard or consensus, got "
                                            "'Hard'"));
  EXPECT_STREQ(SubsetName(Subset::kConsensus), "consensus");
  EXPECT_STREQ(SubsetFileName(Subset::kHard), "hard_2025-05-08-21-00-10.jsonl");
}

TEST(SubsetsTest, FindsTheOfficialFileBesideTheDatasetPlainThenGzip) {
  const std::string dir = ::hb::testing::MakeTempDir();
  const std::string main = dir + "/2025-05-07-06-14-12_oss_eval.jsonl";
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kMain, ""), IsOkAndHolds(main));
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kMain, "x.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--subset-dataset needs")));
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kHard, "/elsewhere/h.jsonl"),
              IsOkAndHolds(std::string("/elsewhere/h.jsonl")));
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kConsensus, ""),
              StatusIs(absl::StatusCode::kNotFound,
                       "--subset consensus: no " + dir +
                           "/consensus_2025-05-09-20-00-46.jsonl (or .gz) beside --dataset; get "
                           "it with scripts/fetch_data.sh, or name the consensus file with "
                           "--subset-dataset FILE (or give it as --dataset with "
                           "--ignore-extra-responses)"));
  const std::string gz = dir + "/consensus_2025-05-09-20-00-46.jsonl.gz";
  HB_ASSERT_OK(WriteFileAtomically(gz, "x"));
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kConsensus, ""), IsOkAndHolds(gz));
  const std::string plain = dir + "/consensus_2025-05-09-20-00-46.jsonl";
  HB_ASSERT_OK(WriteFileAtomically(plain, "x"));
  EXPECT_THAT(SubsetDatasetPath(main, Subset::kConsensus, ""), IsOkAndHolds(plain));
  // A bare file name looks in the current folder.
  EXPECT_THAT(SubsetDatasetPath("main.jsonl", Subset::kHard, ""),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no hard_2025-05-08-21-00-10.jsonl (or .gz)")));
}

TEST(ShardTaskPositionsTest, ShardsPartitionTheTasks) {
  for (int count : {1, 2, 3, 7}) {
    for (size_t n : {0u, 1u, 5u, 30u}) {
      std::multiset<size_t> all;
      for (int index = 0; index < count; ++index) {
        HB_ASSERT_OK_AND_ASSIGN(std::vector<size_t> mine, ShardTaskPositions(n, index, count));
        for (size_t p : mine) {
          EXPECT_EQ(p % count, static_cast<size_t>(index));
          all.insert(p);
        }
      }
      ASSERT_EQ(all.size(), n) << "count " << count;
      size_t expected = 0;
      for (size_t p : all) EXPECT_EQ(p, expected++);  // each position exactly once
    }
  }
  HB_ASSERT_OK_AND_ASSIGN(std::vector<size_t> shard1, ShardTaskPositions(7, 1, 3));
  EXPECT_THAT(shard1, ElementsAre(1, 4));
}

TEST(ShardTaskPositionsTest, RejectsBadShards) {
  EXPECT_THAT(ShardTaskPositions(5, 2, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--shard-index must be in [0, 2), got 2")));
  EXPECT_THAT(
      ShardTaskPositions(5, 0, 0),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--shard-count must be >= 1, got 0")));
  EXPECT_THAT(ShardTaskPositions(5, -1, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -1")));
}

}  // namespace
}  // namespace hb
