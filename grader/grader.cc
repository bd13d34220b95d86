#include "grader/grader.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/logging.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "common/grading/grader_reply.h"
#include "common/healthbench/grader_request_body.h"
#include "common/retry/retry_after.h"
#include "common/retry/retry_status.h"

namespace hb {
namespace {

bool HasAnyRateLimitHeader(const RateLimitInfo& info) {
  return info.limit_requests || info.remaining_requests || info.reset_requests ||
         info.limit_tokens || info.remaining_tokens || info.reset_tokens;
}

}  // namespace

// One GradeItem in progress: at most one upstream attempt or one backoff timer at a time.
// Shared by the attempt callback, the timer and the cancellation callback; `done_` makes the
// completion exactly-once whichever of them gets there first.
class Grader::Call : public std::enable_shared_from_this<Grader::Call> {
 public:
  Call(Grader& grader, std::shared_ptr<const PreparedReply> reply, std::string rubric_item,
       std::string cache_key, std::string request_id, absl::Time deadline,
       std::shared_ptr<CancellationToken> cancel, ItemCallback callback)
      : grader_(grader),
        reply_(std::move(reply)),
        rubric_item_(std::move(rubric_item)),
        cache_key_(std::move(cache_key)),
        request_id_(std::move(request_id)),
        deadline_(deadline),
        cancel_(std::move(cancel)),
        callback_(std::move(callback)) {}

  void Start() {
    if (cancel_ != nullptr) {
      std::weak_ptr<Call> weak = weak_from_this();
      cancel_id_ = cancel_->OnCancel([weak] {
        if (auto self = weak.lock()) self->OnCancelled();
      });
    }
    StartAttempt();
  }

 private:
  void StartAttempt() {
    ChatRequest request;
    int attempt;
    {
      absl::MutexLock lock(&mu_);
      if (done_) return;
      timer_ = 0;
      const absl::Time now = grader_.clock_.Now();
      if (now >= deadline_) {
        FinishLocked(absl::DeadlineExceededError(absl::StrCat(
            "deadline exceeded before attempt ", attempts_ + 1,
            last_failure_.empty() ? "" : absl::StrCat("; last failure: ", last_failure_))));
        return;
      }
      attempt = ++attempts_;
      in_flight_ = true;
      attempt_start_ = now;
      request.timeout = std::min(grader_.config_.attempt_timeout, deadline_ - now);
      request.deadline = deadline_;
    }
    // The shared body pieces with this item between them: no attempt copies the conversation.
    request.body_parts = reply_->body.Parts(rubric_item_);
    auto self = shared_from_this();
    LlmClient::CallId id = grader_.llm_.Complete(
        std::move(request), [self, attempt](absl::StatusOr<ChatResult> result) {
          self->OnResult(attempt, std::move(result));
        });
    bool cancel_now = false;
    {
      absl::MutexLock lock(&mu_);
      if (in_flight_ && attempt == attempts_) {
        upstream_ = id;
        cancel_now = done_;  // cancelled while Complete was starting
      }
    }
    if (cancel_now) grader_.llm_.Cancel(id);
  }

  void OnResult(int attempt, absl::StatusOr<ChatResult> result) {
    absl::MutexLock lock(&mu_);
    if (done_ || attempt != attempts_) return;
    in_flight_ = false;
    upstream_ = 0;
    const absl::Time now = grader_.clock_.Now();
    latency_ += now - attempt_start_;
    if (!result.ok()) {
      RetryOrGiveUpLocked(AttemptOutcomeOf(result.status()), result.status(), now);
      return;
    }
    NoteReplyLocked(*result);
    if (absl::Status size = CheckGraderReplySize(result->content.size(), grader_.config_.limits,
                                                 grader_.config_.settings.max_tokens);
        !size.ok()) {
      FinishLocked(std::move(size));
      return;
    }
    absl::StatusOr<Verdict> verdict = ParseGraderReply(result->content);
    if (!verdict.ok()) {
      RetryOrGiveUpLocked({FailureKind::kMalformedReply, std::nullopt}, verdict.status(), now);
      return;
    }
    FinishWithVerdictLocked(*std::move(verdict), *std::move(result), now);
  }

  // What an answer tells whatever it holds: tokens spent, the model that answered, the
  // upstream's rate-limit headers.
  void NoteReplyLocked(const ChatResult& result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    usage_ += result.usage;
    if (!result.model.empty()) model_ = result.model;
    if (HasAnyRateLimitHeader(result.rate_limit)) {
      rate_limit_ = result.rate_limit;
      rate_limit_seen_ = attempt_start_;
    }
  }

  // The call's verdict from the accepted `result`, stored in the grader's cache (if any).
  void FinishWithVerdictLocked(Verdict verdict, ChatResult result, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ItemVerdict out;
    out.verdict = std::move(verdict);
    out.raw_reply = std::move(result.content);
    out.attempts = attempts_;
    out.model = model_;
    out.usage = usage_;
    out.upstream_latency = latency_;
    out.rate_limit = rate_limit_;
    if (rate_limit_seen_.has_value()) out.rate_limit_age = now - *rate_limit_seen_;
    out.rate_limited_attempts = rate_limited_attempts_;
    out.simulated = result.simulated;
    if (!cache_key_.empty()) {
      grader_.cache_->Store(cache_key_, CachedVerdict{out.raw_reply, out.model, out.usage});
    }
    FinishLocked(std::move(out));
  }

  // After a failed attempt (`outcome`, `failure`): schedules the next attempt, or finishes the
  // call with why it gave up.
  void RetryOrGiveUpLocked(const AttemptOutcome& outcome, const absl::Status& failure,
                           absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    last_kind_ = outcome.kind;
    if (outcome.kind == FailureKind::kHttp429) {
      ++rate_limited_attempts_;
      last_retry_after_ = outcome.retry_after;
    }
    last_failure_ = absl::StrCat(FailureKindName(outcome.kind), ": ", failure.message());
    if (outcome.kind == FailureKind::kCancelled) {
      // Not our cancellation (that sets done_ first): the client is shutting down.
      FinishLocked(absl::UnavailableError(absl::StrCat("upstream call cancelled after ", attempts_,
                                                       " attempt(s): ", failure.message())));
      return;
    }
    const RetryDecision decision = DecideLocked(outcome, now);
    if (!decision.retry) {
      FinishLocked(GiveUpStatus(decision, failure));
      return;
    }
    if (grader_.metrics_ != nullptr)
      grader_.metrics_->RetryScheduled(FailureKindName(outcome.kind));
    HB_LOG_DEBUG("grader: request_id={} attempt={} failed ({}); retrying in {}", request_id_,
                 attempts_, std::string(FailureKindName(outcome.kind)),
                 absl::FormatDuration(decision.delay));
    auto self = shared_from_this();
    timer_ = grader_.scheduler_.Schedule(decision.delay, [self] { self->StartAttempt(); });
  }

  // Whether and when to try again after `outcome` (common/retry Decide), a 429's Retry-After
  // waited out in full up to max_retry_after.
  RetryDecision DecideLocked(const AttemptOutcome& outcome, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RetryDecision decision =
        Decide(grader_.config_.retry, attempts_, outcome, now, deadline_, grader_.Jitter());
    if (outcome.kind != FailureKind::kHttp429 || !outcome.retry_after.has_value() ||
        !(decision.retry || decision.reason == GiveUpReason::kDeadline)) {
      return decision;
    }
    // Waited out in full (a retry before it would only be refused again), up to
    // max_retry_after: a hostile or broken upstream may send 99999999999.
    const RetryAfterWait wait =
        WaitOutRetryAfter(grader_.config_.retry, decision.delay, outcome.retry_after);
    if (wait.capped) {
      HB_LOG_WARN("grader: request_id={} upstream Retry-After {} capped at {}", request_id_,
                  absl::FormatDuration(*outcome.retry_after),
                  absl::FormatDuration(grader_.config_.retry.max_retry_after));
    }
    decision.delay = wait.delay;
    if (!decision.retry ||
        (deadline_ != absl::InfiniteFuture() &&
         now + decision.delay + grader_.config_.retry.min_attempt_time > deadline_)) {
      // Reported as the 429 it is, with the Retry-After, so the caller can wait it out.
      decision.retry = false;
      decision.reason = GiveUpReason::kAttemptsExhausted;
      decision.detail =
          absl::StrCat("the upstream's Retry-After of ", absl::FormatDuration(*outcome.retry_after),
                       " would pass the deadline");
    }
    return decision;
  }

  absl::Status GiveUpStatus(const RetryDecision& decision, const absl::Status& failure)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (decision.reason == GiveUpReason::kNotRetryable) {
      return absl::FailedPreconditionError(
          absl::StrCat("grader backend rejected the request: ", failure.message()));
    }
    std::string message =
        absl::StrFormat("grading failed after %d attempt%s (%s); last failure: %s", attempts_,
                        attempts_ == 1 ? "" : "s", decision.detail, last_failure_);
    if (decision.reason == GiveUpReason::kDeadline) return absl::DeadlineExceededError(message);
    switch (last_kind_) {
      case FailureKind::kHttp429: {
        absl::Status exhausted = absl::ResourceExhaustedError(message);
        if (last_retry_after_.has_value()) SetRetryDelay(exhausted, *last_retry_after_);
        return exhausted;
      }
      case FailureKind::kTimeout:
      case FailureKind::kHttp408:
        return absl::DeadlineExceededError(message);
      default:
        return absl::UnavailableError(message);
    }
  }

  void OnCancelled() {
    LlmClient::CallId upstream = 0;
    Scheduler::TimerId timer = 0;
    {
      absl::MutexLock lock(&mu_);
      if (done_) return;
      upstream = upstream_;
      timer = timer_;
      upstream_ = 0;
      timer_ = 0;
      FinishLocked(absl::CancelledError(
          absl::StrCat("grading cancelled by the caller after ", attempts_, " attempt(s)")));
    }
    if (upstream != 0) grader_.llm_.Cancel(upstream);
    if (timer != 0) grader_.scheduler_.CancelTimer(timer);
  }

  // Marks the call done and runs the callback. The callback must not re-enter this call; it
  // runs under mu_ so that completion is ordered with cancellation.
  void FinishLocked(absl::StatusOr<ItemVerdict> result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    done_ = true;
    ItemCallback callback = std::move(callback_);
    if (cancel_ != nullptr && cancel_id_ != 0) cancel_->Unregister(cancel_id_);
    if (!result.ok()) {
      HB_LOG_DEBUG("grader: request_id={} failed: {}", request_id_, result.status().ToString());
    }
    callback(std::move(result));
  }

  Grader& grader_;
  const std::shared_ptr<const PreparedReply> reply_;
  const std::string rubric_item_;
  // Where the accepted reply goes in the grader's cache; empty without one.
  const std::string cache_key_;
  const std::string request_id_;
  const absl::Time deadline_;
  const std::shared_ptr<CancellationToken> cancel_;
  CancellationToken::CallbackId cancel_id_ = 0;

  absl::Mutex mu_;
  ItemCallback callback_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool in_flight_ ABSL_GUARDED_BY(mu_) = false;
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
  LlmClient::CallId upstream_ ABSL_GUARDED_BY(mu_) = 0;
  Scheduler::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time attempt_start_ ABSL_GUARDED_BY(mu_);
  absl::Duration latency_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  ChatUsage usage_ ABSL_GUARDED_BY(mu_);
  std::string model_ ABSL_GUARDED_BY(mu_);
  RateLimitInfo rate_limit_ ABSL_GUARDED_BY(mu_);
  // Start of the attempt whose answer carried rate_limit_.
  std::optional<absl::Time> rate_limit_seen_ ABSL_GUARDED_BY(mu_);
  int rate_limited_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Duration> last_retry_after_ ABSL_GUARDED_BY(mu_);
  FailureKind last_kind_ ABSL_GUARDED_BY(mu_) = FailureKind::kConnection;
  std::string last_failure_ ABSL_GUARDED_BY(mu_);
};

absl::Status CheckGraderReplySize(size_t bytes, const GraderLimits& limits, int max_tokens) {
  if (bytes <= limits.max_grader_reply_bytes) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the grader's reply is ", bytes, " bytes; the limit is ", limits.max_grader_reply_bytes,
      " (max_grader_reply_bytes): the upstream at --llm-base-url is not answering like the "
      "configured model (max_tokens ",
      max_tokens, ")"));
}

Grader::Grader(LlmClient& llm, Scheduler& scheduler, Clock& clock, std::function<double()> jitter,
               GraderTemplate grader_template, GraderConfig config, GraderMetrics* metrics,
               VerdictCache* cache)
    : llm_(llm),
      scheduler_(scheduler),
      clock_(clock),
      jitter_(std::move(jitter)),
      template_(std::move(grader_template)),
      config_(std::move(config)),
      metrics_(metrics),
      cache_(cache) {}

double Grader::Jitter() {
  absl::MutexLock lock(&jitter_mu_);
  return jitter_ ? jitter_() : 1.0;
}

absl::Status Grader::Validate(const GradeItemInput& input) const {
  absl::StatusOr<std::shared_ptr<const PreparedReply>> reply =
      Prepare(input.conversation, input.reply, input.prompt_cache_key);
  if (!reply.ok()) return reply.status();
  return ValidateItem(**reply, input.item, input.request_id);
}

absl::Status Grader::CheckPromptBudget(size_t conversation_and_reply_bytes) const {
  const size_t limit = config_.limits.max_prompt_bytes;
  if (conversation_and_reply_bytes <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("the conversation and reply are %d bytes, more than a whole rendered grader "
                      "prompt may hold; the limit is %d (max_prompt_bytes)",
                      conversation_and_reply_bytes, limit));
}

absl::StatusOr<std::shared_ptr<const PreparedReply>> Grader::Prepare(
    const std::vector<Message>& conversation, absl::string_view reply,
    absl::string_view prompt_cache_key) const {
  const GraderLimits& limits = config_.limits;
  if (conversation.empty()) return absl::InvalidArgumentError("conversation is empty");
  if (conversation.size() > limits.max_conversation_messages) {
    return absl::InvalidArgumentError(
        absl::StrFormat("conversation has %d messages; the limit is %d (max_conversation_messages)",
                        conversation.size(), limits.max_conversation_messages));
  }
  for (size_t i = 0; i < conversation.size(); ++i) {
    const Message& m = conversation[i];
    HB_RETURN_IF_ERROR(CheckFieldSize(absl::StrCat("conversation[", i, "].content"),
                                      m.content.size(), limits.max_message_bytes,
                                      "max_message_bytes"));
    HB_RETURN_IF_ERROR(
        CheckFieldSize(absl::StrCat("conversation[", i, "].role"), m.role.size(), 64, "fixed"));
  }
  if (conversation.back().role != "user") {
    return absl::InvalidArgumentError(
        absl::StrCat("the last conversation turn must be from the user, got role '",
                     conversation.back().role, "'"));
  }
  HB_RETURN_IF_ERROR(
      CheckFieldSize("reply", reply.size(), limits.max_message_bytes, "max_message_bytes"));
  HB_RETURN_IF_ERROR(CheckFieldSize("prompt_cache_key", prompt_cache_key.size(),
                                    limits.max_field_bytes, "max_field_bytes"));
  size_t bytes = reply.size();
  for (const Message& m : conversation) bytes += m.content.size();
  HB_RETURN_IF_ERROR(CheckPromptBudget(bytes));
  return MakePrepared(conversation, reply, prompt_cache_key);
}

std::shared_ptr<const PreparedReply> Grader::MakePrepared(
    const std::vector<Message>& conversation, absl::string_view reply,
    absl::string_view prompt_cache_key) const {
  auto prepared = std::make_unique<PreparedReply>();
  prepared->prompt = template_.FillConversation(RenderGradedConversation(conversation, reply));
  if (auto live = prepared_->Find(prepared->prompt.text, prompt_cache_key)) return live;
  prepared->prompt_cache_key = std::string(prompt_cache_key);
  prepared->body = SharedChatCompletionBody(config_.settings, prepared->prompt.Segments(),
                                            prepared->prompt_cache_key);
  return prepared_->Add(std::move(prepared));
}

absl::Status Grader::ValidateItem(const PreparedReply& reply, const RubricItem& item,
                                  absl::string_view request_id) const {
  const GraderLimits& limits = config_.limits;
  HB_RETURN_IF_ERROR(
      CheckFieldSize("request_id", request_id.size(), limits.max_field_bytes, "max_field_bytes"));
  if (item.criterion.empty()) return absl::InvalidArgumentError("rubric item has no criterion");
  HB_RETURN_IF_ERROR(CheckFieldSize("rubric item criterion", item.criterion.size(),
                                    limits.max_message_bytes, "max_message_bytes"));
  if (!std::isfinite(item.points)) {
    return absl::InvalidArgumentError("rubric item points must be a finite number");
  }
  HB_RETURN_IF_ERROR(CheckFieldSize("rubric item points_text", item.points_text.size(),
                                    limits.max_field_bytes, "max_field_bytes"));
  if (item.tags.size() > limits.max_tags_per_item) {
    return absl::InvalidArgumentError(
        absl::StrFormat("rubric item has %d tags; the limit is %d (max_tags_per_item)",
                        item.tags.size(), limits.max_tags_per_item));
  }
  for (size_t i = 0; i < item.tags.size(); ++i) {
    HB_RETURN_IF_ERROR(CheckFieldSize(absl::StrCat("rubric item tags[", i, "]"),
                                      item.tags[i].size(), limits.max_field_bytes,
                                      "max_field_bytes"));
  }
  // The criterion and points_text are bounded above, so this cannot overflow.
  const size_t rubric_item_bytes = item.criterion.size() + item.points_text.size() + 32;
  const size_t prompt_bytes = reply.prompt.FilledBytes(rubric_item_bytes);
  if (prompt_bytes > limits.max_prompt_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the rendered grader prompt would be about %d bytes (conversation, reply and rubric "
        "item, which is substituted %d times); the limit is %d (max_prompt_bytes)",
        prompt_bytes, reply.prompt.rubric_item_slots, limits.max_prompt_bytes));
  }
  return absl::OkStatus();
}

std::string Grader::RequestBody(const GradeItemInput& input) const {
  absl::StatusOr<std::shared_ptr<const PreparedReply>> reply =
      Prepare(input.conversation, input.reply, input.prompt_cache_key);
  // Unchecked input (tests, dry runs) is rendered all the same.
  const std::shared_ptr<const PreparedReply> prepared =
      reply.ok() ? *std::move(reply)
                 : MakePrepared(input.conversation, input.reply, input.prompt_cache_key);
  return JoinParts(prepared->body.Parts(RenderRubricItem(input.item)));
}

void Grader::GradeItem(const GradeItemInput& input, absl::Time deadline,
                       std::shared_ptr<CancellationToken> cancel, ItemCallback done) {
  absl::StatusOr<std::shared_ptr<const PreparedReply>> reply =
      Prepare(input.conversation, input.reply, input.prompt_cache_key);
  if (!reply.ok()) {
    done(reply.status());
    return;
  }
  GradePrepared(*std::move(reply), input.item, input.request_id, deadline, std::move(cancel),
                std::move(done));
}

void Grader::GradePrepared(std::shared_ptr<const PreparedReply> reply, const RubricItem& item,
                           std::string request_id, absl::Time deadline,
                           std::shared_ptr<CancellationToken> cancel, ItemCallback done) {
  if (absl::Status valid = ValidateItem(*reply, item, request_id); !valid.ok()) {
    done(valid);
    return;
  }
  if (cancel != nullptr && cancel->cancelled()) {
    done(absl::CancelledError("grading cancelled by the caller before it started"));
    return;
  }
  std::string rubric_item = RenderRubricItem(item);
  std::string cache_key;
  if (AnswerFromCache(*reply, rubric_item, item.verbatim, &cache_key, done)) return;
  auto call =
      std::make_shared<Call>(*this, std::move(reply), std::move(rubric_item), std::move(cache_key),
                             std::move(request_id), deadline, std::move(cancel), std::move(done));
  call->Start();
}

bool Grader::AnswerFromCache(const PreparedReply& reply, const std::string& rubric_item,
                             bool verbatim, std::string* key, ItemCallback& done) {
  if (cache_ == nullptr) return false;
  *key = VerdictCacheKey(config_.settings,
                         GraderTemplate::FillRubricItem(reply.prompt, rubric_item), verbatim);
  std::optional<CachedVerdict> hit = cache_->Lookup(*key);
  if (!hit.has_value()) return false;
  absl::StatusOr<Verdict> verdict = ParseGraderReply(hit->raw_reply);
  if (!verdict.ok()) return false;  // not ours to trust: grade it again (and keep the old entry)
  ItemVerdict out;
  out.verdict = *std::move(verdict);
  out.raw_reply = std::move(hit->raw_reply);
  out.model = std::move(hit->model);
  out.usage = hit->usage;
  out.from_cache = true;
  if (metrics_ != nullptr) metrics_->VerdictCacheHit();
  // On the scheduler's thread, as for an upstream answer: the caller may hold its own locks.
  scheduler_.Schedule(
      absl::ZeroDuration(),
      [out = std::move(out), done = std::move(done)]() mutable { done(std::move(out)); });
  return true;
}

}  // namespace hb
