// Grader: grades one (conversation, reply, rubric item) with the LLM grader, exactly as the
// reference builds the prompt and parses the answer (SPEC §4-§5), with bounded retries on
// timers (common/retry) instead of the reference's unbounded loops (SPEC §19 items 3 and 5).
//
// A grader that cannot grade never returns a verdict: every failure is an error status.
//
//   Grader grader(llm, scheduler, Clock::Real(), jitter, std::move(tmpl), GraderConfig{});
//   grader.GradeItem(input, deadline, token, [](absl::StatusOr<ItemVerdict> v) { ... });
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/cancellation.h"
#include "common/base/clock.h"
#include "common/base/scheduler.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"
#include "common/retry/retry_policy.h"
#include "grader/grader_metrics.h"
#include "grader/prepared_replies.h"
#include "grader/verdict_cache.h"
#include "llm/llm_client.h"

namespace hb {

// Request size limits, checked before anything is rendered or sent upstream: a request over a
// limit is kInvalidArgument naming the field and the limit (never echoing the field's value).
// The defaults are far above every official HealthBench record (at most 26 rubric items, 3
// tags per item, tags of 85 bytes, criteria of 3.2 KB, conversations of 5 KB).
struct GraderLimits {
  // Per message content, reply and criterion.
  size_t max_message_bytes = 1 << 20;
  size_t max_conversation_messages = 512;
  // Rubric items per GradeReply.
  size_t max_rubric_items = 512;
  // Tags per rubric item.
  size_t max_tags_per_item = 64;
  // Every short string field: each tag, points_text, request_id, prompt_cache_key.
  size_t max_field_bytes = 1024;
  // The rendered grader prompt of one item (template, conversation, reply and rubric item,
  // counting every `<<rubric_item>>` the conversation itself contains: SPEC §4.4 quirk 11).
  size_t max_prompt_bytes = 4 << 20;
  // The grader model's reply (the message content). The reference's max_tokens of 2048 cannot
  // produce a tenth of this; a longer reply means the upstream is not the model configured
  // (broken or hostile), so it is a final kFailedPrecondition: never a verdict, never paid for
  // again by a retry.
  size_t max_grader_reply_bytes = 256 << 10;
};

// kFailedPrecondition (final) when a grader reply of `bytes` is over
// limits.max_grader_reply_bytes: the upstream is not answering like the configured model. The
// online grader and the Batch API path (orchestrator/run/batch_grader.h) both check it before
// parsing a reply.
absl::Status CheckGraderReplySize(size_t bytes, const GraderLimits& limits, int max_tokens);

// Everything about how grading runs, except the collaborators.
struct GraderConfig {
  GraderSettings settings;
  RetryPolicy retry;
  GraderLimits limits;
  // Upper bound of one upstream attempt (the caller's deadline may shorten it).
  absl::Duration attempt_timeout = absl::Seconds(120);
};

// One item to grade. `conversation` is the prompt, optionally led by the policy's system
// message; its last turn must be from the user. `reply` may be empty (it is graded).
struct GradeItemInput {
  std::vector<Message> conversation;
  std::string reply;
  RubricItem item;
  // For logs only.
  std::string request_id;
  // Passed upstream as "prompt_cache_key" when non-empty.
  std::string prompt_cache_key;
};

// A verdict and how it was obtained.
struct ItemVerdict {
  Verdict verdict;
  // The accepted grader reply, verbatim.
  std::string raw_reply;
  // Upstream attempts made (1 when the first answer was usable).
  int attempts = 0;
  std::string model;
  // Summed over attempts that returned a body.
  ChatUsage usage;
  // Wall time in upstream calls, all attempts.
  absl::Duration upstream_latency = absl::ZeroDuration();
  // The x-ratelimit-* headers of the latest attempt that carried any (all unset when none did).
  RateLimitInfo rate_limit;
  // From the start of the attempt that carried `rate_limit` to the verdict.
  absl::Duration rate_limit_age = absl::ZeroDuration();
  // Attempts answered with HTTP 429.
  int rate_limited_attempts = 0;
  // The accepted reply came from hb-llm-sim (ChatResult::simulated): a simulated verdict.
  bool simulated = false;
  // Answered from the VerdictCache: no upstream request was made (attempts 0); `raw_reply`,
  // `model` and `usage` are the cached grading's (`usage` is what the hit saved, not spent).
  bool from_cache = false;
};

using ItemCallback = absl::AnyInvocable<void(absl::StatusOr<ItemVerdict>)>;

class Grader {
 public:
  // `llm`, `scheduler`, `clock`, `metrics` (optional) and `cache` (optional) are not owned and
  // must outlive the grader and every call in progress. `jitter` returns uniform draws from
  // [0, 1]; it is called under the grader's lock, so it need not be thread-safe. With a
  // `cache`, an item whose request (VerdictCacheKey) is in it is answered from it without an
  // upstream request (ItemVerdict::from_cache), and every accepted reply is stored in it.
  Grader(LlmClient& llm, Scheduler& scheduler, Clock& clock, std::function<double()> jitter,
         GraderTemplate grader_template, GraderConfig config, GraderMetrics* metrics = nullptr,
         VerdictCache* cache = nullptr);

  // Grades one item; `done` runs exactly once: inline for an invalid request, otherwise on the
  // LLM client's or scheduler's thread. Errors:
  //   kInvalidArgument    bad request (see Validate);
  //   kFailedPrecondition the backend rejected the request (HTTP 400/401/403/404/other 4xx,
  //                       TLS verification), with the backend's message;
  //   kUnavailable, kResourceExhausted (last failure a 429), kDeadlineExceeded (last failure a
  //                       timeout, or `deadline` would pass): the retry budget ran out; the
  //                       message gives the attempts made and the last failure; a
  //                       kResourceExhausted status carries the last 429's Retry-After as
  //                       its retry delay (common/retry/retry_status.h RetryDelay) when the
  //                       upstream sent one;
  // A 429's Retry-After is waited out before the next attempt, even beyond `retry.cap`, up to
  // `retry.max_retry_after` (a longer one is capped and logged: a broken or hostile upstream
  // must not park a call for days); when
  // that wait would pass `deadline`, the item fails with kResourceExhausted at once.
  //   kCancelled          `cancel` was cancelled (the upstream call in flight is cancelled too).
  // `cancel` may be null.
  void GradeItem(const GradeItemInput& input, absl::Time deadline,
                 std::shared_ptr<CancellationToken> cancel, ItemCallback done);

  // kInvalidArgument when `input` cannot be graded: ValidateReply's and ValidateItem's errors.
  absl::Status Validate(const GradeItemInput& input) const;

  // kInvalidArgument when `conversation_and_reply_bytes` (the message contents plus the reply)
  // alone exceed max_prompt_bytes: every rendered prompt holds at least that much. Transports
  // call it before copying a request, so an oversized one costs no copy. Thread-safe.
  absl::Status CheckPromptBudget(size_t conversation_and_reply_bytes) const;

  // Checks the part of a request every rubric item shares and renders it once. Errors
  // (kInvalidArgument): empty conversation, more turns than max_conversation_messages, the
  // last turn not from the user, a message or the reply over max_message_bytes, a
  // prompt_cache_key over max_field_bytes, CheckPromptBudget's (checked before rendering).
  // Thread-safe.
  absl::StatusOr<std::shared_ptr<const PreparedReply>> Prepare(
      const std::vector<Message>& conversation, absl::string_view reply,
      absl::string_view prompt_cache_key) const;

  // kInvalidArgument when `item` cannot be graded with `reply`: an empty criterion or one over
  // max_message_bytes, non-finite points, points_text, a tag or `request_id` over
  // max_field_bytes, more than max_tags_per_item tags, a rendered prompt over
  // max_prompt_bytes (computed, not rendered). Thread-safe.
  absl::Status ValidateItem(const PreparedReply& reply, const RubricItem& item,
                            absl::string_view request_id) const;

  // GradeItem for one rubric item of a prepared reply; the call holds `reply` (no copy) and
  // sends reply->body's shared pieces with the item for each upstream attempt. `done` and
  // errors as GradeItem.
  void GradePrepared(std::shared_ptr<const PreparedReply> reply, const RubricItem& item,
                     std::string request_id, absl::Time deadline,
                     std::shared_ptr<CancellationToken> cancel, ItemCallback done);

  // The exact upstream request body for `input` (the same bytes GradeItem sends).
  std::string RequestBody(const GradeItemInput& input) const;

  const GraderConfig& config() const { return config_; }
  const GraderTemplate& grader_template() const { return template_; }

 private:
  class Call;
  double Jitter();
  // Renders what every rubric item of the reply shares (Prepare, after its checks), or finds
  // it rendered already for another item still in flight.
  std::shared_ptr<const PreparedReply> MakePrepared(const std::vector<Message>& conversation,
                                                    absl::string_view reply,
                                                    absl::string_view prompt_cache_key) const;
  // With a cache: the item's cache key, and true after answering `done` from the cache (on the
  // scheduler's thread). Without one: "" and false.
  bool AnswerFromCache(const PreparedReply& reply, const std::string& rubric_item, bool verbatim,
                       std::string* key, ItemCallback& done);

  LlmClient& llm_;
  Scheduler& scheduler_;
  Clock& clock_;
  absl::Mutex jitter_mu_;
  std::function<double()> jitter_ ABSL_GUARDED_BY(jitter_mu_);
  const GraderTemplate template_;
  const GraderConfig config_;
  GraderMetrics* const metrics_;
  VerdictCache* const cache_;
  const std::shared_ptr<PreparedReplies> prepared_ = PreparedReplies::Create();
};

}  // namespace hb
