// The simulator's replies through the project's real grader-reply parser (hb::grader_reply):
// correct and fenced replies give the simulator's verdict, malformed and non-object replies are
// kDataLoss failures to retry, never a wrong verdict.
#include "common/grading/grader_reply.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/sim_core.h"
#include "simulator/sim_verdict.h"
#include "tests/testing/status_matchers.h"

namespace hb::sim {
namespace {

using ::hb::testing::StatusIs;

TEST(SimGraderReplyTest, EveryContentVariantParsesToTheTrueVerdictOrFails) {
  for (bool met : {true, false}) {
    for (uint64_t seq = 0; seq < 6; ++seq) {
      for (FaultKind kind : {FaultKind::kNone, FaultKind::kFenced}) {
        absl::StatusOr<Verdict> verdict = ParseGraderReply(FaultReplyContent(kind, met, seq));
        ASSERT_TRUE(verdict.ok()) << verdict.status();
        EXPECT_EQ(verdict->criteria_met, met);
      }
      for (FaultKind kind : {FaultKind::kMalformed, FaultKind::kNonObject}) {
        EXPECT_THAT(ParseGraderReply(FaultReplyContent(kind, met, seq)),
                    StatusIs(absl::StatusCode::kDataLoss, ::testing::HasSubstr("grader reply")));
      }
    }
  }
}

}  // namespace
}  // namespace hb::sim
