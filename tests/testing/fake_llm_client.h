// FakeLlmClient: the LLM double for grader logic tests (with FakeScheduler, fake_scheduler.h).
// Calls and timers wait until the test completes or fires them; nothing runs on another thread.
//
//   FakeClock clock;
//   FakeScheduler scheduler(clock);
//   FakeLlmClient llm;
//   Grader grader(llm, scheduler, clock, [] { return 0.5; }, tmpl, config);
//   grader.GradeItem(input, absl::InfiniteFuture(), nullptr, callback);
//   llm.CompleteNext(HttpFailure(503));           // attempt 1 fails
//   EXPECT_THAT(scheduler.PendingDelays(), ElementsAre(absl::Milliseconds(250)));
//   scheduler.AdvanceAndRun(absl::Milliseconds(250));  // attempt 2 starts
//   llm.CompleteNext(ChatReply(R"({"criteria_met": true, "explanation": "ok"})"));
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "llm/llm_client.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/pending_calls.h"

namespace hb::testing {

// A completion with `content` (HTTP 200, model "fake-grader", 100/0/20 tokens).
ChatResult ChatReply(std::string content);

// An HTTP error the way OpenAiLlmClient reports it (status code and AttemptOutcome payload),
// e.g. HttpFailure(429, absl::Seconds(2)).
absl::Status HttpFailure(int http_status, std::optional<absl::Duration> retry_after = std::nullopt,
                         std::string message = "");

// A transport failure: kUnavailable (connection) or kDeadlineExceeded (timeout).
absl::Status ConnectionFailure();
absl::Status TimeoutFailure();

// An LlmClient whose calls stay pending until the test completes them. Thread-safe.
class FakeLlmClient final : public LlmClient {
 public:
  CallId Complete(ChatRequest request, ChatCallback done) override;
  // Completes the call with kCancelled (inline, like a client that aborts at once) and records
  // the cancellation.
  void Cancel(CallId id) override;

  // Calls waiting for an answer.
  size_t pending() const;
  // Every request received, in order, as it goes on the wire: body_parts, when given, are
  // joined into `body` (and the responder sees them so too).
  std::vector<ChatRequest> requests() const;
  // Ids passed to Cancel that were still pending.
  std::vector<CallId> cancelled() const;
  // Wait until at least `n` calls are pending / were cancelled; false on timeout.
  bool WaitForPending(size_t n, absl::Duration timeout) const;
  bool WaitForCancelled(size_t n, absl::Duration timeout) const;
  // Completes the oldest pending call (on this thread); false when none is pending.
  bool CompleteNext(absl::StatusOr<ChatResult> result);
  // When set, every call is answered at once (inline) by `responder`.
  void SetResponder(std::function<absl::StatusOr<ChatResult>(const ChatRequest&)> responder);

 private:
  PendingCalls<ChatRequest, ChatCallback> calls_;
  mutable absl::Mutex mu_;
  std::function<absl::StatusOr<ChatResult>(const ChatRequest&)> responder_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::testing
