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
  ASSERT_TRUE(manager_.Create("s1", TaskRef::ById("task-a")).ok());
  EXPECT_THAT(manager_.Touch("s1"), IsOkAndHolds(TaskRef::ById("task-a")));
  EXPECT_THAT(manager_.Create("s1", TaskRef::ById("task-b")),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("Session already exists")));
  EXPECT_TRUE(manager_.Delete("s1"));
  EXPECT_FALSE(manager_.Delete("s1"));
  EXPECT_THAT(manager_.Touch("s1"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("Active environment not found")));
}

TEST_F(OrsSessionManagerTest, ReapsOnlySessionsIdleLongerThanTheTimeout) {
  ASSERT_TRUE(manager_.Create("old", TaskRef::ById("t")).ok());
  ASSERT_TRUE(manager_.Create("pinged", TaskRef::ById("t")).ok());
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

TEST(OrsSessionManagerBoundsTest, SessionsPastTheCapAreRefused) {
  FakeClock clock;
  OrsSessionManager manager(clock, {absl::Minutes(15), absl::Seconds(60), 2, 10});
  ASSERT_TRUE(manager.Create("s1", TaskRef::ById("t")).ok());
  ASSERT_TRUE(manager.Create("s2", TaskRef::ById("t")).ok());
  EXPECT_THAT(manager.Create("s3", TaskRef::ById("t")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("too many open sessions")));
  EXPECT_THAT(manager.Create("s2", TaskRef::ById("t")),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("already exists")));
  ASSERT_TRUE(manager.Delete("s1"));
  EXPECT_TRUE(manager.Create("s3", TaskRef::ById("t")).ok());
}

TEST(OrsSessionManagerBoundsTest, OldestFinishedCallIsForgottenPastTheCap) {
  FakeClock clock;
  int next_id = 0;
  OrsSessionManager manager(clock, {absl::Minutes(15), absl::Seconds(60), 10, 2},
                            [&] { return absl::StrCat("call-", ++next_id); });
  const std::string running = manager.StartCall();  // call-1, never finishes
  const std::string dropped = manager.StartCall();  // call-2
  const std::string a = manager.StartCall();
  const std::string b = manager.StartCall();
  const std::string c = manager.StartCall();
  manager.FinishCall(dropped, "x");
  manager.DropCall(dropped);  // a stale id in the finishing order must not count
  manager.FinishCall(a, "a");
  clock.Advance(absl::Seconds(30));
  manager.FinishCall(b, "b");
  EXPECT_NE(manager.FindCall(a), nullptr);
  clock.Advance(absl::Seconds(15));
  manager.FinishCall(c, "c");  // a third finished result: the oldest (a) goes
  EXPECT_EQ(manager.FindCall(a), nullptr);
  EXPECT_EQ(manager.FindCall(b)->payload, "b");
  EXPECT_EQ(manager.FindCall(c)->payload, "c");
  EXPECT_EQ(manager.call_count(), 3u);  // running, b, c
  // b and c finished 15 s apart: a reap at b's linger end takes b only.
  clock.Advance(absl::Seconds(45));
  manager.Reap();
  EXPECT_EQ(manager.FindCall(b), nullptr);
  EXPECT_NE(manager.FindCall(c), nullptr);
  EXPECT_NE(manager.FindCall(running), nullptr);
}

TEST(RandomUuidTest, IsVersion4) {
  const std::string a = RandomUuid();
  EXPECT_THAT(a,
              MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"));
  EXPECT_NE(a, RandomUuid());
}

}  // namespace
}  // namespace hb::env
