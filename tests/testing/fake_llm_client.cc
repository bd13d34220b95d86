#include "tests/testing/fake_llm_client.h"

#include "absl/strings/str_cat.h"

namespace hb::testing {

ChatResult ChatReply(std::string content) {
  ChatResult result;
  result.content = std::move(content);
  result.model = "fake-grader";
  result.http_status = 200;
  result.usage.prompt_tokens = 100;
  result.usage.completion_tokens = 20;
  return result;
}

absl::Status HttpFailure(int http_status, std::optional<absl::Duration> retry_after,
                         std::string message) {
  std::string text =
      absl::StrCat("upstream HTTP ", http_status, ": ", message.empty() ? "fake failure" : message);
  AttemptOutcome outcome{FailureKind::kOtherHttp4xx, retry_after};
  absl::StatusCode code = absl::StatusCode::kFailedPrecondition;
  switch (http_status) {
    case 400:
      outcome.kind = FailureKind::kHttp400;
      code = absl::StatusCode::kInvalidArgument;
      break;
    case 401:
      outcome.kind = FailureKind::kHttp401;
      code = absl::StatusCode::kUnauthenticated;
      break;
    case 403:
      outcome.kind = FailureKind::kHttp403;
      code = absl::StatusCode::kPermissionDenied;
      break;
    case 404:
      outcome.kind = FailureKind::kHttp404;
      code = absl::StatusCode::kNotFound;
      break;
    case 408:
      outcome.kind = FailureKind::kHttp408;
      code = absl::StatusCode::kDeadlineExceeded;
      break;
    case 409:
      outcome.kind = FailureKind::kHttp409;
      code = absl::StatusCode::kAborted;
      break;
    case 429:
      outcome.kind = FailureKind::kHttp429;
      code = absl::StatusCode::kResourceExhausted;
      break;
    default:
      if (http_status >= 500) {
        outcome.kind = FailureKind::kHttp5xx;
        code = absl::StatusCode::kUnavailable;
      }
  }
  return WithAttemptOutcome(absl::Status(code, text), outcome);
}

absl::Status ConnectionFailure() {
  return WithAttemptOutcome(absl::UnavailableError("HTTP transport: Couldn't connect to server"),
                            {FailureKind::kConnection, std::nullopt});
}

absl::Status TimeoutFailure() {
  return WithAttemptOutcome(absl::DeadlineExceededError("HTTP transport: Timeout was reached"),
                            {FailureKind::kTimeout, std::nullopt});
}

LlmClient::CallId FakeLlmClient::Complete(ChatRequest request, ChatCallback done) {
  for (const auto& part : request.body_parts) request.body += *part;  // what goes on the wire
  request.body_parts.clear();
  std::function<absl::StatusOr<ChatResult>(const ChatRequest&)> responder;
  {
    absl::MutexLock lock(&mu_);
    responder = responder_;
  }
  if (!responder) return calls_.Hold(std::move(request), std::move(done));
  const CallId id = calls_.Record(request);
  done(responder(request));
  return id;
}

void FakeLlmClient::Cancel(CallId id) { calls_.Cancel(id); }

size_t FakeLlmClient::pending() const { return calls_.pending(); }

std::vector<ChatRequest> FakeLlmClient::requests() const { return calls_.requests(); }

std::vector<LlmClient::CallId> FakeLlmClient::cancelled() const { return calls_.cancelled(); }

bool FakeLlmClient::WaitForPending(size_t n, absl::Duration timeout) const {
  return calls_.WaitForPending(n, timeout);
}

bool FakeLlmClient::WaitForCancelled(size_t n, absl::Duration timeout) const {
  return calls_.WaitForCancelled(n, timeout);
}

bool FakeLlmClient::CompleteNext(absl::StatusOr<ChatResult> result) {
  return calls_.CompleteNext(std::move(result));
}

void FakeLlmClient::SetResponder(
    std::function<absl::StatusOr<ChatResult>(const ChatRequest&)> responder) {
  absl::MutexLock lock(&mu_);
  responder_ = std::move(responder);
}

}  // namespace hb::testing
