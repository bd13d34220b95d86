// PolicyFeed, the sampling engine of `sample` and `run --policy`, on fake LLM clients and an
// in-memory journal: policies at once with their probes, replies journaled before they are
// handed on, and the errors that stop a job (a refused probe, a grader verdict as reply, the
// journal).
#include "orchestrator/policy/policy_feed.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/in_memory_reply_journal.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::hb::testing::InMemoryReplyJournal;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kVerdict[] = R"({"explanation": "ok", "criteria_met": true})";

class PolicyFeedTest : public ::testing::Test {
 protected:
  PolicyFeedTest() {
    for (int i = 0; i < 4; ++i) {
      Example example;
      example.prompt_id = absl::StrCat("task", i);
      example.prompt = {{"user", absl::StrCat("question ", i)}};
      examples_.push_back(std::move(example));
    }
  }

  std::vector<const Example*> Tasks() const {
    std::vector<const Example*> tasks;
    for (const Example& example : examples_) tasks.push_back(&example);
    return tasks;
  }

  static PolicySource Source(const std::string& name, int max_in_flight) {
    PolicySource source;
    source.checkpoint = name;
    source.options.policy_base_url = absl::StrCat("http://", name, "/v1");
    source.options.request.model = absl::StrCat("m-", name);
    source.options.max_in_flight = max_in_flight;
    source.options.endpoint_flag = absl::StrCat("--policy ", name);
    return source;
  }

  absl::StatusOr<std::unique_ptr<PolicyFeed>> Start(std::vector<LlmClient*> llms,
                                                    std::vector<PolicySource> sources) {
    std::vector<std::vector<const Example*>> tasks(sources.size(), Tasks());
    return PolicyFeed::StartOn(
        PolicyClients{std::move(llms), &scheduler_}, std::move(sources), std::move(tasks), journal_,
        [this](size_t source, SampledReply reply) {
          absl::MutexLock lock(&mu_);
          handed_on_.emplace_back(source, reply.prompt_id);
        },
        [this] {
          absl::MutexLock lock(&mu_);
          ++finished_;
        });
  }

  int finished() {
    absl::MutexLock lock(&mu_);
    return finished_;
  }
  std::vector<std::pair<size_t, std::string>> handed_on() {
    absl::MutexLock lock(&mu_);
    return handed_on_;
  }

  std::vector<Example> examples_;
  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient a_;
  FakeLlmClient b_;
  InMemoryReplyJournal journal_;
  absl::Mutex mu_;
  std::vector<std::pair<size_t, std::string>> handed_on_ ABSL_GUARDED_BY(mu_);
  int finished_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(PolicyFeedTest, SamplesEveryPolicyJournalsEachReplyThenHandsItOn) {
  a_.SetResponder([](const ChatRequest&) { return ChatReply("answer a"); });
  b_.SetResponder([](const ChatRequest&) { return ChatReply("answer b"); });
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PolicyFeed> feed,
                          Start({&a_, &b_}, {Source("a", 3), Source("b", 1)}));
  EXPECT_EQ(finished(), 1);
  EXPECT_THAT(handed_on(), SizeIs(8));
  HB_EXPECT_OK(feed->status());
  for (const std::string name : {"a", "b"}) {
    HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> records, journal_.Replies(name));
    ASSERT_THAT(records, SizeIs(4)) << name;
    HB_ASSERT_OK_AND_ASSIGN(SampledReply reply, ParseSampledReply(records[0].reply));
    EXPECT_EQ(reply.prompt_id, "task0");  // the probe: the first task
    EXPECT_EQ(reply.response, absl::StrCat("answer ", name));
  }
  EXPECT_THAT(a_.requests()[0].body, HasSubstr("question 0"));
  const PolicyFeed::Progress progress = feed->progress();
  EXPECT_EQ(progress.tasks, 8);
  EXPECT_EQ(progress.done, 8);
  EXPECT_THAT(feed->Failures()[0], IsEmpty());
}

// The probe is one of a source's max_in_flight calls, not one more: what the feed's HTTP client
// is sized for (the sum of the sources' max_in_flight).
TEST_F(PolicyFeedTest, TheProbeTakesOneOfTheMaxInFlightSlots) {
  absl::StatusOr<std::unique_ptr<PolicyFeed>> feed = absl::UnknownError("not started");
  std::thread starter([&] { feed = Start({&a_}, {Source("a", 3)}); });
  ASSERT_TRUE(a_.WaitForPending(3, absl::Seconds(30)));  // the probe and two more
  ASSERT_TRUE(a_.CompleteNext(ChatReply("answer")));     // the probe
  starter.join();
  HB_ASSERT_OK(feed.status());
  // The sampler keeps its two out; the probe's slot is not handed to a third.
  EXPECT_EQ(a_.pending(), 2u);
  ASSERT_TRUE(a_.CompleteNext(ChatReply("answer")));
  EXPECT_EQ(a_.pending(), 2u);  // the last task took the freed slot
  EXPECT_THAT(a_.requests(), SizeIs(4));
  while (a_.CompleteNext(ChatReply("answer"))) {
  }
  EXPECT_EQ(finished(), 1);
}

// A key the endpoint refuses: Start's error names the checkpoint and the fix; the sampler,
// waiting for the probe with one slot, never sent another request.
TEST_F(PolicyFeedTest, ARefusedProbeIsStartsError) {
  a_.SetResponder([](const ChatRequest&) { return HttpFailure(401, std::nullopt, "bad key"); });
  EXPECT_THAT(Start({&a_}, {Source("a", 1)}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("--policy a=m-a@http://a/v1: probe request to http://a/v1 "
                                 "failed")));
  EXPECT_THAT(a_.requests(), SizeIs(1));
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> records, journal_.Replies("a"));
  EXPECT_THAT(records, IsEmpty());
}

// The probe answered, a later reply is a grader verdict: never journaled, the feed stops with
// the reason (on_finished wakes the consumer), and Stop cancels the call still out.
TEST_F(PolicyFeedTest, AGraderVerdictAfterStartStopsTheFeed) {
  absl::StatusOr<std::unique_ptr<PolicyFeed>> feed = absl::UnknownError("not started");
  std::thread starter([&] { feed = Start({&a_}, {Source("a", 2)}); });
  ASSERT_TRUE(a_.WaitForPending(2, absl::Seconds(30)));  // the probe and one more, at once
  ASSERT_TRUE(a_.CompleteNext(ChatReply("Drink water.")));
  starter.join();
  ASSERT_TRUE(feed.ok()) << feed.status();
  ASSERT_TRUE(a_.CompleteNext(ChatReply(kVerdict)));
  EXPECT_THAT((*feed)->status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is a grader verdict")));
  EXPECT_EQ(finished(), 1);
  (*feed)->Stop();
  EXPECT_EQ(a_.pending(), 0u);
  EXPECT_THAT((*feed)->Failures()[0], IsEmpty());  // a cancelled call is not the task's fault
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> records, journal_.Replies("a"));
  ASSERT_THAT(records, SizeIs(1));
  EXPECT_THAT(records[0].reply, HasSubstr("Drink water."));
}

TEST_F(PolicyFeedTest, AJournalWriteErrorStopsTheJob) {
  journal_.set_commit_error(absl::InternalError("disk full"));
  a_.SetResponder([](const ChatRequest&) { return ChatReply("answer"); });
  EXPECT_THAT(Start({&a_}, {Source("a", 4)}),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("cannot journal the policy reply of task task0: disk full")));
}

TEST_F(PolicyFeedTest, NothingToSampleFinishesAtOnce) {
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<PolicyFeed> feed,
                          PolicyFeed::StartOn(PolicyClients{{&a_}, &scheduler_}, {Source("a", 2)},
                                              {{}}, journal_, nullptr, [this] {
                                                absl::MutexLock lock(&mu_);
                                                ++finished_;
                                              }));
  EXPECT_EQ(finished(), 1);
  EXPECT_THAT(a_.requests(), IsEmpty());
}

}  // namespace
}  // namespace hb
