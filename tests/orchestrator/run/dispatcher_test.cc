#include "orchestrator/run/dispatcher.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/retry/retry_status.h"
#include "common/rpc/concurrency_limit.h"
#include "common/rpc/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/dispatch_watcher.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_grader_client.h"
#include "tests/testing/fake_run_metrics.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/in_memory_verdict_store.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::DispatchWatcher;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeGraderClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::GradeItemRequest;
using ::hb::testing::GradeItemResponse;
using ::hb::testing::InMemoryVerdictStore;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// Tasks with `items` rubric items each, and one response per task.
struct Fixture {
  std::string checkpoint = "base";
  std::vector<Example> examples;
  std::vector<Response> responses;

  Fixture(int tasks, int items) {
    examples.resize(tasks);
    responses.resize(tasks);
    for (int t = 0; t < tasks; ++t) {
      Example& e = examples[t];
      e.prompt_id = "task" + std::to_string(t);
      e.prompt = {{"user", "question " + std::to_string(t)}};
      for (int i = 0; i < items; ++i) {
        RubricItem item;
        item.criterion = "criterion " + std::to_string(i);
        item.points = i + 1;
        item.points_text = std::to_string(i + 1);
        e.rubrics.push_back(item);
      }
      responses[t].prompt_id = e.prompt_id;
      responses[t].response = "answer " + std::to_string(t);
    }
  }

  std::vector<PlannedRow> Rows() const {
    std::vector<PlannedRow> rows;
    for (size_t t = 0; t < examples.size(); ++t) {
      for (int i = 0; i < static_cast<int>(examples[t].rubrics.size()); ++i) {
        rows.push_back(PlannedRow{&checkpoint, &examples[t], &responses[t], i});
      }
    }
    return rows;
  }
};

// The verdict a fake grader gives: met when the rubric index is even.
absl::StatusOr<GradeItemResponse> EvenIsMet(const GradeItemRequest& request) {
  GradeItemResponse response;
  response.set_criteria_met(static_cast<int>(request.rubric_item().points()) % 2 == 1);
  response.set_explanation("checked " + request.request_id());
  response.set_attempts(1);
  response.mutable_usage()->set_prompt_tokens(1000);
  response.mutable_usage()->set_cached_prompt_tokens(600);
  response.mutable_usage()->set_completion_tokens(50);
  return response;
}

DispatcherOptions FastOptions(FakeClock* clock, FakeScheduler* scheduler) {
  DispatcherOptions options;
  options.clock = clock;
  options.scheduler = scheduler;
  options.backoff_base = absl::ZeroDuration();
  options.backoff_cap = absl::ZeroDuration();
  options.progress_interval = absl::Hours(1);
  options.send_prompt_cache_key = true;  // the tests tell rows apart by it
  return options;
}

TEST(DispatcherTest, GradesEveryRowAndRecordsVerdicts) {
  Fixture fixture(3, 4);
  fixture.responses[1].system_prompt = "You are a doctor.";
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.row_timeout = absl::Seconds(42);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats = dispatcher.Run(fixture.Rows());

  EXPECT_EQ(stats.planned_rows, 12);
  EXPECT_EQ(stats.ok_rows, 12);
  EXPECT_EQ(stats.failed_rows, 0);
  EXPECT_EQ(stats.retries, 0);
  EXPECT_EQ(stats.prompt_tokens, 12000);
  EXPECT_EQ(stats.cached_tokens, 7200);
  EXPECT_EQ(stats.completion_tokens, 600);
  HB_EXPECT_OK(dispatcher.status());
  const auto rows = store.rows();
  ASSERT_THAT(rows, SizeIs(12));
  const RowRecord& r = rows.at("base/task1/2");
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.criteria_met);  // points 3
  EXPECT_EQ(r.explanation, "checked base/task1/2/1");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_FALSE(rows.at("base/task1/1").criteria_met);  // points 2

  const std::vector<GradeItemRequest> requests = client.requests();
  ASSERT_THAT(requests, SizeIs(12));
  // Sent in plan order: a task's items together.
  EXPECT_EQ(requests[4].request_id(), "base/task1/0/1");
  const GradeItemRequest& q = requests[6];
  ASSERT_EQ(q.conversation_size(), 2);
  EXPECT_EQ(q.conversation(0).role(), "system");
  EXPECT_EQ(q.conversation(0).content(), "You are a doctor.");
  EXPECT_EQ(q.conversation(1).role(), "user");
  EXPECT_EQ(q.conversation(1).content(), "question 1");
  EXPECT_EQ(q.reply(), "answer 1");
  EXPECT_EQ(q.rubric_item().criterion(), "criterion 2");
  EXPECT_EQ(q.rubric_item().points_text(), "3");
  EXPECT_EQ(q.prompt_cache_key(), "task1");
  EXPECT_EQ(requests[0].conversation_size(), 1);  // no system prompt
  for (absl::Duration timeout : client.timeouts()) EXPECT_EQ(timeout, absl::Seconds(42));
}

TEST(DispatcherTest, GradesRowsThatArriveWhileItRunsUntilTheInputCloses) {
  Fixture fixture(3, 2);
  const std::vector<PlannedRow> all = fixture.Rows();
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  dispatcher.AddRows({all[0], all[1]});  // before Run: queued
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(); });
  // Every row so far recorded, the input still open: Run waits for more instead of returning.
  watcher.AwaitIdle([](const DispatchStats& s) { return s.ok_rows == 2 && s.in_flight == 0; });
  int64_t seen = watcher.reports();
  dispatcher.AddRows({all[2], all[3], all[4]});
  watcher.AwaitIdle([](const DispatchStats& s) { return s.ok_rows == 5; }, seen);
  dispatcher.AddRows({all[5]});
  dispatcher.CloseInput();
  runner.join();
  EXPECT_EQ(stats.planned_rows, 6);
  EXPECT_EQ(stats.ok_rows, 6);
  EXPECT_THAT(store.rows(), SizeIs(6));
  const std::vector<GradeItemRequest> requests = client.requests();
  ASSERT_THAT(requests, SizeIs(6));
  EXPECT_EQ(requests[2].request_id(), "base/task1/0/1");  // in the order added
  EXPECT_EQ(requests[5].request_id(), "base/task2/1/1");
}

// The rest of a run whose probe row failed: rows added, never run. Destroying it drops them
// (their callbacks run while the dispatcher's state is alive: ASan checks that) and sends none.
TEST(DispatcherTest, ADispatcherThatNeverRanDropsItsRowsUnsent) {
  Fixture fixture(2, 3);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  {
    Dispatcher dispatcher(&client, &store, FastOptions(&clock, &scheduler));
    dispatcher.AddRows(fixture.Rows());
    EXPECT_EQ(dispatcher.Stats().planned_rows, 6);
  }
  EXPECT_THAT(client.requests(), SizeIs(0));
  EXPECT_THAT(store.rows(), SizeIs(0));
}

TEST(DispatcherTest, ClosedInputWithoutRowsAndStopBothEndRun) {
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  DispatchWatcher watcher;
  watcher.Attach(options);
  {
    Dispatcher dispatcher(&client, &store, options);
    std::thread runner([&] { dispatcher.Run(); });
    watcher.AwaitIdle([](const DispatchStats& s) { return s.planned_rows == 0; });
    dispatcher.CloseInput();
    runner.join();
  }
  Dispatcher stopped(&client, &store, options);
  std::thread runner([&] { stopped.Run(); });
  stopped.RequestStop();  // the input never closes: a stop still ends Run
  runner.join();
  EXPECT_THAT(client.requests(), SizeIs(0));
}

// A verdict-cache hit is journaled with its saved tokens and marked, and spends nothing.
TEST(DispatcherTest, VerdictCacheHitsAreMarkedAndSpendNoTokens) {
  Fixture fixture(2, 3);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder([](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    absl::StatusOr<GradeItemResponse> response = EvenIsMet(request);
    if (request.prompt_cache_key() == "task0") {
      response->set_from_cache(true);
      response->set_attempts(0);
    }
    return response;
  });
  InMemoryVerdictStore store;
  Dispatcher dispatcher(&client, &store, FastOptions(&clock, &scheduler));
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_EQ(stats.ok_rows, 6);
  EXPECT_EQ(stats.from_cache_rows, 3);
  EXPECT_EQ(stats.prompt_tokens, 3000);  // task1's rows only
  EXPECT_EQ(stats.cached_tokens, 1800);
  EXPECT_EQ(stats.completion_tokens, 150);
  const auto rows = store.rows();
  EXPECT_TRUE(rows.at("base/task0/1").from_cache);
  EXPECT_EQ(rows.at("base/task0/1").prompt_tokens, 1000);  // what the hit saved
  EXPECT_FALSE(rows.at("base/task1/1").from_cache);
}

TEST(DispatcherTest, NeverExceedsMaxInFlight) {
  Fixture fixture(10, 5);  // 50 rows
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;  // manual: calls wait for the test
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 4;
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  int answered = 0;
  while (answered < 50) {
    ASSERT_TRUE(client.WaitForPending(std::min(4, 50 - answered)))
        << "after " << answered << " answers";
    EXPECT_LE(dispatcher.Stats().in_flight, 4);
    answered += client.CompleteAll(EvenIsMet, /*reverse=*/answered % 8 == 0);
  }
  runner.join();
  EXPECT_EQ(client.max_outstanding(), 4);
  EXPECT_EQ(stats.ok_rows, 50);
  EXPECT_THAT(client.requests(), SizeIs(50));
}

class RetryableCodeTest : public ::testing::TestWithParam<absl::StatusCode> {};

TEST_P(RetryableCodeTest, RetriesUpToTheBudgetThenRecordsFailure) {
  Fixture fixture(1, 2);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  const absl::StatusCode code = GetParam();
  client.set_responder([code](const GradeItemRequest&) -> absl::StatusOr<GradeItemResponse> {
    return absl::Status(code, "replica trouble");
  });
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.row_attempts = 3;
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_THAT(client.requests(), SizeIs(6));
  EXPECT_EQ(stats.failed_rows, 2);
  EXPECT_EQ(stats.ok_rows, 0);
  EXPECT_EQ(stats.retries, 4);
  const RowRecord row = store.rows().at("base/task0/1");
  EXPECT_FALSE(row.ok);
  EXPECT_EQ(row.attempts, 3);
  EXPECT_EQ(row.error, absl::StatusCodeToString(code) + ": replica trouble (attempt 3 of 3)");
}

INSTANTIATE_TEST_SUITE_P(Codes, RetryableCodeTest,
                         ::testing::Values(absl::StatusCode::kUnavailable,
                                           absl::StatusCode::kResourceExhausted,
                                           absl::StatusCode::kDeadlineExceeded,
                                           absl::StatusCode::kInternal,
                                           absl::StatusCode::kUnknown));

// A broken upstream fails every row alike: after N same-code failures in a row nothing more is
// sent, and the rows never sent stay unrecorded for the next run.
TEST(DispatcherTest, StopsDispatchingAfterNSameCodeFailuresInARow) {
  Fixture fixture(1, 10);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder([](const GradeItemRequest&) -> absl::StatusOr<GradeItemResponse> {
    return absl::FailedPreconditionError("upstream HTTP 401: bad key");
  });
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 1;
  options.stop_after_same_failures = 3;
  Dispatcher dispatcher(&client, &store, options);
  const DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_TRUE(stats.gave_up);
  EXPECT_FALSE(stats.stopping);
  EXPECT_THAT(client.requests(), SizeIs(3));
  EXPECT_EQ(stats.failed_rows, 3);
  EXPECT_THAT(store.rows(), SizeIs(3));
  EXPECT_THAT(dispatcher.last_failure(),
              ::hb::testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                      HasSubstr("upstream HTTP 401")));
}

// A graded row, or a failure with another code, starts the count again.
TEST(DispatcherTest, DifferentOutcomesResetTheSameFailureCount) {
  Fixture fixture(1, 10);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder([](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    const int index = static_cast<int>(request.rubric_item().points()) - 1;
    if (index % 3 == 2) return EvenIsMet(request);
    if (index % 3 == 1) return absl::InvalidArgumentError("bad row");
    return absl::FailedPreconditionError("upstream HTTP 401: bad key");
  });
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 1;
  options.stop_after_same_failures = 2;
  Dispatcher dispatcher(&client, &store, options);
  const DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_FALSE(stats.gave_up);
  EXPECT_EQ(stats.failed_rows, 7);
  EXPECT_EQ(stats.ok_rows, 3);
}

class FinalCodeTest : public ::testing::TestWithParam<absl::StatusCode> {};

TEST_P(FinalCodeTest, FailsTheRowAtOnce) {
  Fixture fixture(1, 1);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  const absl::StatusCode code = GetParam();
  client.set_responder([code](const GradeItemRequest&) -> absl::StatusOr<GradeItemResponse> {
    return absl::Status(code, "bad row");
  });
  InMemoryVerdictStore store;
  Dispatcher dispatcher(&client, &store, FastOptions(&clock, &scheduler));
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_THAT(client.requests(), SizeIs(1));
  EXPECT_EQ(stats.failed_rows, 1);
  EXPECT_EQ(stats.retries, 0);
  EXPECT_EQ(store.rows().at("base/task0/0").error,
            absl::StatusCodeToString(code) + ": bad row (attempt 1 of 3)");
}

INSTANTIATE_TEST_SUITE_P(Codes, FinalCodeTest,
                         ::testing::Values(absl::StatusCode::kInvalidArgument,
                                           absl::StatusCode::kFailedPrecondition,
                                           absl::StatusCode::kPermissionDenied,
                                           absl::StatusCode::kUnauthenticated,
                                           absl::StatusCode::kNotFound));

TEST(DispatcherTest, RetrySucceedsAndCountsAttempts) {
  Fixture fixture(2, 2);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  absl::Mutex mu;
  std::map<std::string, int> seen;
  client.set_responder([&](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    absl::MutexLock lock(&mu);
    const std::string row = request.prompt_cache_key() + "/" + request.rubric_item().criterion();
    if (++seen[row] == 1 && request.prompt_cache_key() == "task1") {
      return absl::UnavailableError("replica went away");
    }
    return EvenIsMet(request);
  });
  InMemoryVerdictStore store;
  Dispatcher dispatcher(&client, &store, FastOptions(&clock, &scheduler));
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_EQ(stats.ok_rows, 4);
  EXPECT_EQ(stats.retries, 2);
  EXPECT_EQ(store.rows().at("base/task1/0").attempts, 2);
  EXPECT_EQ(store.rows().at("base/task0/0").attempts, 1);
  // The retry carries its attempt number.
  std::vector<std::string> ids;
  for (const GradeItemRequest& r : client.requests()) ids.push_back(r.request_id());
  EXPECT_THAT(ids, ::testing::Contains("base/task1/1/2"));
}

TEST(DispatcherTest, TellsItsMetricsOfRowsRetriesFailuresAndTokens) {
  Fixture fixture(2, 2);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  absl::Mutex mu;
  std::map<std::string, int> seen;
  client.set_responder([&](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    absl::MutexLock lock(&mu);
    const std::string row = request.prompt_cache_key() + "/" + request.rubric_item().criterion();
    if (row == "task0/criterion 1") return absl::PermissionDeniedError("key refused");
    if (++seen[row] == 1 && request.prompt_cache_key() == "task1") {
      return absl::UnavailableError("replica went away");
    }
    return EvenIsMet(request);
  });
  InMemoryVerdictStore store;
  testing::FakeRunMetrics metrics;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.metrics = &metrics;
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_EQ(stats.ok_rows, 3);
  EXPECT_EQ(metrics.planned(), 4);
  EXPECT_EQ(metrics.recorded(),
            (std::map<std::string, int64_t>{{"OK", 3}, {"PERMISSION_DENIED", 1}}));
  EXPECT_EQ(metrics.retried(), (std::map<std::string, int64_t>{{"UNAVAILABLE", 2}}));
  EXPECT_EQ(metrics.prompt_tokens(), 3000);  // graded rows only
  EXPECT_EQ(metrics.rate_limited(), 0);
}

TEST(DispatcherTest, RetryWaitsForItsBackoffOnTheClock) {
  Fixture fixture(1, 1);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  int calls = 0;
  client.set_responder([&](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    if (++calls == 1) return absl::UnavailableError("down");
    return EvenIsMet(request);
  });
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.backoff_base = absl::Seconds(30);
  options.backoff_cap = absl::Seconds(60);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  // The first attempt failed and the row waits for a timer due exactly one backoff later.
  watcher.AwaitIdle([](const DispatchStats& s) { return s.waiting_retry == 1; });
  EXPECT_THAT(scheduler.PendingDelays(), ElementsAre(absl::Seconds(30)));
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(29)), 0);
  EXPECT_THAT(client.requests(), SizeIs(1));
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(1)), 1);
  runner.join();
  EXPECT_THAT(client.requests(), SizeIs(2));
  EXPECT_EQ(stats.ok_rows, 1);
}

TEST(DispatcherTest, BackoffDoublesUpToTheCap) {
  DispatcherOptions options;
  options.backoff_base = absl::Milliseconds(250);
  options.backoff_cap = absl::Seconds(1);
  const RetryPolicy policy = RowRetryPolicy(options);
  EXPECT_EQ(BackoffCeiling(policy, 1), absl::Milliseconds(250));
  EXPECT_EQ(BackoffCeiling(policy, 2), absl::Milliseconds(500));
  EXPECT_EQ(BackoffCeiling(policy, 3), absl::Seconds(1));
  EXPECT_EQ(BackoffCeiling(policy, 40), absl::Seconds(1));
}

TEST(DispatcherTest, RowsCountOnlyOnceCommitted) {
  Fixture fixture(2, 3);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  store.set_deferred(true);
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  absl::Notification finished;
  std::thread runner([&] {
    stats = dispatcher.Run(fixture.Rows());
    finished.Notify();
  });
  // Every call answered, nothing committed: Run waits for the journal.
  const DispatchStats idle = watcher.AwaitIdle(
      [](const DispatchStats& s) { return s.in_flight == 0 && s.waiting_retry == 0; });
  EXPECT_EQ(store.queued(), 6);
  EXPECT_EQ(idle.ok_rows, 0);
  EXPECT_EQ(dispatcher.Stats().ok_rows, 0);
  EXPECT_FALSE(finished.HasBeenNotified());
  store.CommitPending();
  runner.join();
  EXPECT_EQ(stats.ok_rows, 6);
}

TEST(DispatcherTest, StopDrainsThenCancelsAtTheDeadline) {
  Fixture fixture(4, 5);  // 20 rows
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 6;
  options.drain_timeout = absl::Seconds(20);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  ASSERT_TRUE(client.WaitForPending(6));
  dispatcher.RequestStop();
  // Two calls finish during the drain; the rest are still out at the deadline.
  int answered = 0;
  client.CompleteAll([&](const GradeItemRequest& r) -> absl::StatusOr<GradeItemResponse> {
    if (answered++ < 2) return EvenIsMet(r);
    return absl::UnavailableError("late");  // retryable, budget left: not recorded
  });
  EXPECT_EQ(client.cancel_all_calls(), 0);
  runner.join();
  EXPECT_TRUE(stats.stopping);
  EXPECT_EQ(stats.ok_rows, 2);
  EXPECT_EQ(stats.failed_rows, 0);
  EXPECT_THAT(client.requests(), SizeIs(6));  // nothing new after the stop
  EXPECT_THAT(store.rows(), SizeIs(2));
}

TEST(DispatcherTest, CancelsCallsStillOutAtTheDrainDeadline) {
  Fixture fixture(2, 2);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.drain_timeout = absl::Seconds(20);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  ASSERT_TRUE(client.WaitForPending(4));
  dispatcher.RequestStop();
  // Draining: the one timer left is the drain deadline.
  watcher.AwaitIdle([](const DispatchStats& s) { return s.stopping; });
  EXPECT_THAT(scheduler.PendingDelays(), ElementsAre(absl::Seconds(20)));
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(19)), 0);
  EXPECT_EQ(client.cancel_all_calls(), 0);
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(1)), 1);
  runner.join();
  EXPECT_EQ(client.cancel_all_calls(), 1);
  EXPECT_EQ(stats.ok_rows + stats.failed_rows, 0);
  EXPECT_THAT(store.rows(), SizeIs(0));
}

TEST(DispatcherTest, JournalErrorStopsTheRun) {
  Fixture fixture(5, 5);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  store.set_commit_error(absl::ResourceExhaustedError("disk full"));
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 1;
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats = dispatcher.Run(fixture.Rows());
  EXPECT_THAT(dispatcher.status(),
              hb::testing::StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("disk full")));
  EXPECT_EQ(stats.ok_rows, 0);
  EXPECT_LT(client.requests().size(), 25u);
}

TEST(DispatcherTest, ReportsProgress) {
  Fixture fixture(1, 3);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  client.set_responder(EvenIsMet);
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  std::vector<DispatchStats> reports;
  options.on_progress = [&](const DispatchStats& s) { reports.push_back(s); };
  Dispatcher dispatcher(&client, &store, options);
  dispatcher.Run(fixture.Rows());
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back().ok_rows, 3);
  EXPECT_EQ(reports.back().planned_rows, 3);
}

// Answers like EvenIsMet, but the upstream refused the first attempt with a 429.
absl::StatusOr<GradeItemResponse> RateLimitedThenMet(const GradeItemRequest& request) {
  absl::StatusOr<GradeItemResponse> response = EvenIsMet(request);
  response->set_attempts(2);
  response->set_rate_limited_attempts(1);
  return response;
}

TEST(DispatcherTest, AdaptiveWindowShrinksOnRateLimitSignalsThenRecovers) {
  Fixture fixture(100, 10);  // 1000 rows
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;  // manual: each round answers every call in flight
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 32;
  options.adaptive_concurrency = true;
  options.limiter.initial_window = 4;
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  // The window only changes on replies, which this thread delivers: between rounds it is
  // stable and the dispatcher fills it.
  auto round = [&](const FakeGraderClient::Responder& answer) {
    const int window = static_cast<int>(dispatcher.Stats().window);
    EXPECT_TRUE(client.WaitForPending(window));
    EXPECT_EQ(client.pending(), window);  // never more than the window
    client.CompleteAll(answer);
    return static_cast<int>(dispatcher.Stats().window);
  };
  EXPECT_EQ(dispatcher.Stats().window, 4);
  int window = 4;
  for (int i = 0; i < 6; ++i) {
    const int next = round(EvenIsMet);
    // Slow start: grows every round until the maximum.
    EXPECT_TRUE(next > window || next == 32) << "round " << i << ": " << window << " -> " << next;
    window = next;
  }
  ASSERT_GT(window, 8);
  // Every reply of one round reports a 429, but they were all sent before the first decrease:
  // one multiplicative decrease.
  const int shrunk = round(RateLimitedThenMet);
  EXPECT_EQ(shrunk, window / 2);
  EXPECT_EQ(dispatcher.Stats().rate_limited_replies, window);
  // Recovery: additive increase from the new threshold.
  int recovered = shrunk;
  for (int i = 0; i < 6; ++i) recovered = round(EvenIsMet);
  EXPECT_GT(recovered, shrunk);
  EXPECT_LE(recovered, 32);
  client.set_responder(EvenIsMet);
  client.CompleteAll(EvenIsMet);
  runner.join();
  EXPECT_EQ(stats.ok_rows, 1000);
  EXPECT_EQ(stats.failed_rows, 0);
  EXPECT_LE(client.max_outstanding(), 32);
}

// What a grader replica past its --max-concurrent-rpcs answers, as the client reads it off the
// wire: its ConcurrencyLimit's refusal through common/rpc/grpc_status.
absl::Status ServerBusyRefusal() {
  ConcurrencyLimit limit(1, absl::Seconds(1), "RPCs in progress (--max-concurrent-rpcs)");
  absl::StatusOr<ConcurrencyLimit::Permit> held = limit.TryAcquire(1);
  return FromGrpcStatus(ToGrpcStatus(limit.TryAcquire(1).status()));
}

// The upstream's 429 relayed by the grader, with the same 1 s delay.
absl::Status UpstreamRateLimit() {
  absl::Status exhausted =
      absl::ResourceExhaustedError("grading failed after 1 attempt; last failure: http_429");
  SetRetryDelay(exhausted, absl::Seconds(1));
  return FromGrpcStatus(ToGrpcStatus(exhausted));
}

// The start-up race of BENCHMARKS' memory scenario: a replica refuses a few RPCs because the
// next one arrives before it released the last. The job's window must not pay for it; the
// upstream's 429 still halves it.
TEST(DispatcherTest, AServerBusyRefusalKeepsTheAdaptiveWindowWhileARateLimitHalvesIt) {
  Fixture fixture(10, 10);  // 100 rows
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;  // manual: the test answers every call in flight
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.max_in_flight = 16;
  options.adaptive_concurrency = true;  // starts at the maximum
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  auto refuse_all = [&](const absl::Status& refusal) {
    EXPECT_TRUE(client.WaitForPending(16));
    EXPECT_EQ(client.pending(), 16);
    const int64_t seen = watcher.reports();
    client.CompleteAll([&](const GradeItemRequest&) { return refusal; });
    // Every refused row waits for its retry delay, and dispatch is held as long (the delay
    // comes with every refusal): nothing is sent until the clock moves.
    const DispatchStats idle =
        watcher.AwaitIdle([](const DispatchStats& s) { return s.in_flight == 0; }, seen);
    EXPECT_GE(idle.waiting_retry, 16);
    EXPECT_EQ(client.pending(), 0);
  };

  refuse_all(ServerBusyRefusal());
  EXPECT_EQ(dispatcher.Stats().window, 16);
  EXPECT_EQ(dispatcher.Stats().rate_limited_replies, 0);
  scheduler.AdvanceAndRun(absl::Seconds(1));  // the retries and the end of the hold
  refuse_all(UpstreamRateLimit());            // whichever rows the window took: 16 of them
  EXPECT_EQ(dispatcher.Stats().window, 8);
  EXPECT_EQ(dispatcher.Stats().rate_limited_replies, 16);

  client.set_responder(EvenIsMet);
  scheduler.AdvanceAndRun(absl::Seconds(1));
  runner.join();
  EXPECT_EQ(stats.ok_rows, 100);
  EXPECT_EQ(stats.failed_rows, 0);
  EXPECT_EQ(stats.retries, 32);
}

// A response carrying the upstream's request budget.
absl::StatusOr<GradeItemResponse> MetWithBudget(const GradeItemRequest& request, int64_t remaining,
                                                int64_t reset_ms) {
  absl::StatusOr<GradeItemResponse> response = EvenIsMet(request);
  auto* rl = response->mutable_rate_limit();
  rl->set_has_requests(true);
  rl->set_limit_requests(100);
  rl->set_remaining_requests(remaining);
  rl->set_reset_requests_ms(reset_ms);
  return response;
}

TEST(DispatcherTest, AdaptivePacingSpreadsTheRemainingBudgetOnTheClock) {
  Fixture fixture(2, 10);  // 20 rows
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.adaptive_concurrency = true;
  options.limiter.initial_window = 2;
  options.limiter.reset_margin = absl::Milliseconds(100);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  const absl::Time t0 = clock.Now();
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  ASSERT_TRUE(client.WaitForPending(2));
  watcher.AwaitIdle([](const DispatchStats& s) { return s.in_flight == 2; });
  clock.Advance(absl::Seconds(1));
  // 2 requests left until t0+11s: the dispatcher may not use its (grown) window at once.
  int64_t seen = watcher.reports();
  client.CompleteAll([](const GradeItemRequest& r) { return MetWithBudget(r, 2, 10000); });
  EXPECT_EQ(dispatcher.Stats().window, 3);
  EXPECT_DOUBLE_EQ(dispatcher.Stats().paced_rate, 0.2);  // 2 per 10 s
  // Paced: nothing in flight, the next dispatch waits for a timer.
  watcher.AwaitIdle([](const DispatchStats& s) { return s.in_flight == 0; }, seen);
  EXPECT_THAT(client.requests(), SizeIs(2));
  clock.Set(t0 + absl::Seconds(5));
  seen = watcher.reports();
  EXPECT_EQ(scheduler.RunDue(), 1);
  watcher.AwaitIdle([](const DispatchStats& s) { return s.in_flight == 1; }, seen);
  // Exactly one call went out (the last request is kept for later in the window).
  EXPECT_THAT(client.requests(), SizeIs(3));
  // After the reset nothing is known about the new budget: the window fills.
  clock.Set(t0 + absl::Seconds(11) + absl::Milliseconds(100));
  EXPECT_EQ(scheduler.RunDue(), 1);
  ASSERT_TRUE(client.WaitForPending(3));
  EXPECT_THAT(client.requests(), SizeIs(5));
  client.set_responder(EvenIsMet);
  client.CompleteAll(EvenIsMet);
  runner.join();
  EXPECT_EQ(stats.ok_rows, 20);
}

TEST(DispatcherTest, ResourceExhaustedRetryWaitsForTheUpstreamRetryAfter) {
  Fixture fixture(1, 1);
  FakeClock clock;
  FakeScheduler scheduler(clock);
  FakeGraderClient client;
  int calls = 0;
  client.set_responder([&](const GradeItemRequest& request) -> absl::StatusOr<GradeItemResponse> {
    if (++calls == 1) {
      absl::Status exhausted =
          absl::ResourceExhaustedError("grading failed after 1 attempt; last failure: http_429");
      SetRetryDelay(exhausted, absl::Seconds(45));
      return exhausted;
    }
    return EvenIsMet(request);
  });
  InMemoryVerdictStore store;
  DispatcherOptions options = FastOptions(&clock, &scheduler);
  options.backoff_base = absl::Seconds(1);
  options.backoff_cap = absl::Seconds(4);
  DispatchWatcher watcher;
  watcher.Attach(options);
  Dispatcher dispatcher(&client, &store, options);
  DispatchStats stats;
  std::thread runner([&] { stats = dispatcher.Run(fixture.Rows()); });
  const DispatchStats idle =
      watcher.AwaitIdle([](const DispatchStats& s) { return s.waiting_retry == 1; });
  EXPECT_EQ(idle.rate_limited_replies, 1);
  // The retry is due after the upstream's Retry-After, not after the 1 s backoff.
  EXPECT_THAT(scheduler.PendingDelays(), ElementsAre(absl::Seconds(45)));
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(4)), 0);  // the backoff alone would retry now
  EXPECT_THAT(client.requests(), SizeIs(1));
  EXPECT_EQ(scheduler.AdvanceAndRun(absl::Seconds(41)), 1);
  runner.join();
  EXPECT_THAT(client.requests(), SizeIs(2));
  EXPECT_EQ(stats.ok_rows, 1);
}

}  // namespace
}  // namespace hb
