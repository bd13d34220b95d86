// What hb-env's HTTP routes share (environment/http/): the JSON replies every route writes
// through the one response writer (http/http_server.h), and the inbox through which grading
// threads hand work back to the listener's loop thread.
#pragma once

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "environment/environment.h"
#include "http/http_server.h"

struct event;

namespace hb::env {

// 200 with a JSON body.
void SendJson(HttpExchange& exchange, absl::string_view body);
// `code` with {"detail": message}.
void SendError(HttpExchange& exchange, int code, absl::string_view message);
// The HTTP status of `status`'s code (ors_wire.h's table) with {"detail": message}; a
// kResourceExhausted carries Retry-After.
void SendStatus(HttpExchange& exchange, const absl::Status& status);
// SendJson of the body, or SendStatus of the error.
void SendResult(HttpExchange& exchange, const absl::StatusOr<std::string>& body);

// Results and tasks handed to the loop thread. Shared with every Submit callback, so a callback
// that arrives after the server is gone finds `wake` null and drops its result.
struct LoopInbox {
  absl::Mutex mu;
  event* wake ABSL_GUARDED_BY(mu) = nullptr;
  std::vector<std::pair<std::string, absl::StatusOr<SubmitResult>>> results ABSL_GUARDED_BY(mu);
  std::vector<absl::AnyInvocable<void()>> tasks ABSL_GUARDED_BY(mu);
  // The call whose Submit is running on the loop thread right now, and the result when its
  // callback ran inline (a rejection up front).
  std::thread::id loop_thread ABSL_GUARDED_BY(mu);
  std::string inline_call ABSL_GUARDED_BY(mu);
  std::optional<absl::StatusOr<SubmitResult>> inline_result ABSL_GUARDED_BY(mu);
};

// Runs `task` on the loop thread (through `inbox`); false (task dropped) when no loop listens
// (shut down, or a table driven without a server). Thread-safe.
bool PostToLoop(LoopInbox& inbox, absl::AnyInvocable<void()> task);

}  // namespace hb::env
