#include "environment/http/route_support.h"

#include <event2/event.h>

#include "environment/ors/ors_wire.h"

namespace hb::env {

void SendJson(HttpExchange& exchange, absl::string_view body) {
  exchange.Reply(200, {{"Content-Type", "application/json"}}, body);
}

void SendError(HttpExchange& exchange, int code, absl::string_view message) {
  exchange.Reply(code, {{"Content-Type", "application/json"}}, ErrorBody(message));
}

void SendStatus(HttpExchange& exchange, const absl::Status& status) {
  HttpHeaders headers;
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    headers.emplace_back("Retry-After", RetryAfterSeconds(status));
  }
  headers.emplace_back("Content-Type", "application/json");
  exchange.Reply(HttpStatusOf(status.code()), headers, ErrorBody(status.message()));
}

void SendResult(HttpExchange& exchange, const absl::StatusOr<std::string>& body) {
  if (body.ok()) {
    SendJson(exchange, *body);
  } else {
    SendStatus(exchange, body.status());
  }
}

bool PostToLoop(LoopInbox& inbox, absl::AnyInvocable<void()> task) {
  absl::MutexLock lock(&inbox.mu);
  if (inbox.wake == nullptr) return false;
  inbox.tasks.push_back(std::move(task));
  event_active(inbox.wake, 0, 0);
  return true;
}

}  // namespace hb::env
