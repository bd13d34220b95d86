// OrsSessionManager with a fake clock: session lifecycle, idle reaping at its exact boundary,
// and the lingering of finished calls for reconnects.
#include "environment/ors/ors_session_manager.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::FakeClock;
using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

class OrsSessionManagerTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  int next_id_ = 0;
  OrsSessionManager manager_{clock_, {absl::Minutes(15), absl::Seconds(60)}, [this] {
                               return absl::StrCat("call-", ++next_id_);
                             }};
};

TEST_F(OrsSessionManagerTest, CreateTouchDelete) {
  ASSERT_TRUE(manager_.Create("s1", "task-a").ok());
  EXPECT_THAT(manager_.Touch("s1"), IsOkAndHolds("task-a"));
  EXPECT_THAT(manager_.Create("s1", "task-b"),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("Session already exists")));
  EXPECT_TRUE(manager_.Delete("s1"));
  EXPECT_FALSE(manager_.Delete("s1"));
  EXPECT_THAT(manager_.Touch("s1"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("Active environment not found")));
}

TEST_F(OrsSessionManagerTest, ReapsOnlySessionsIdleLongerThanTheTimeout) {
  ASSERT_TRUE(manager_.Create("old", "t").ok());
  ASSERT_TRUE(manager_.Create("pinged", "t").ok());
  clock_.Advance(absl::Minutes(10));
  ASSERT_TRUE(manager_.Touch("pinged").ok());
  clock_.Advance(absl::Minutes(5));  // "old" idle exactly 15 min: not yet
  EXPECT_THAT(manager_.Reap(), IsEmpty());
  clock_.Advance(absl::Nanoseconds(1));
  EXPECT_THAT(manager_.Reap(), ElementsAre("old"));
  EXPECT_EQ(manager_.session_count(), 1u);
  clock_.Advance(absl::Minutes(10) + absl::Nanoseconds(1));
  EXPECT_THAT(manager_.Reap(), ElementsAre("pinged"));
  EXPECT_EQ(manager_.session_count(), 0u);
}

TEST_F(OrsSessionManagerTest, FinishedCallsLingerThenGoRunningCallsStay) {
  const std::string running = manager_.StartCall();
  const std::string finished = manager_.StartCall();
  EXPECT_EQ(running, "call-1");
  EXPECT_FALSE(manager_.FindCall(finished)->done);
  manager_.FinishCall(finished, "{\"ok\":true}");
  manager_.FinishCall(finished, "second result ignored");
  ASSERT_TRUE(manager_.FindCall(finished)->done);
  EXPECT_EQ(manager_.FindCall(finished)->payload, "{\"ok\":true}");
  clock_.Advance(absl::Seconds(60) - absl::Nanoseconds(1));
  manager_.Reap();
  EXPECT_NE(manager_.FindCall(finished), nullptr);
  clock_.Advance(absl::Nanoseconds(1));
  manager_.Reap();
  EXPECT_EQ(manager_.FindCall(finished), nullptr);
  clock_.Advance(absl::Hours(24));
  manager_.Reap();
  EXPECT_NE(manager_.FindCall(running), nullptr);
  manager_.DropCall(running);
  EXPECT_EQ(manager_.FindCall(running), nullptr);
  EXPECT_EQ(manager_.call_count(), 0u);
}

TEST(RandomUuidTest, IsVersion4) {
  const std::string a = RandomUuid();
  EXPECT_THAT(a,
              MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_NE(a, RandomUuid());
}

}  // namespace
}  // namespace hb::env
