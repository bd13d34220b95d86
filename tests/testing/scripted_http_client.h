// ScriptedHttpClient: an HttpClient that answers each request at once (inline, on the caller's
// thread) with the next answer of a script, and records the requests. For code that blocks its
// caller on each request anyway (BatchApi). FakeHttpClient is the one whose requests wait until
// the test answers them. Not thread-safe.
//
//   ScriptedHttpClient http;
//   http.Then(MakeHttpResponse(429, "{}", {{"retry-after", "7"}}));
//   http.Then(MakeHttpResponse(200, kBody));
#pragma once

#include <deque>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "http/http_client.h"

namespace hb::testing {

class ScriptedHttpClient final : public HttpClient {
 public:
  // Appends the answer to the script's end.
  void Then(absl::StatusOr<HttpResponse> response) { script_.push_back(std::move(response)); }

  // Answers with the script's next answer (kInternal "script exhausted" when it has none).
  CallId Post(HttpRequest request, HttpCallback done) override {
    requests_.push_back(std::move(request));
    absl::StatusOr<HttpResponse> next = absl::InternalError("script exhausted");
    if (!script_.empty()) {
      next = std::move(script_.front());
      script_.pop_front();
    }
    done(std::move(next));
    return requests_.size();
  }
  // Nothing is ever pending.
  void Cancel(CallId) override {}

  // Every request sent, in order.
  const std::vector<HttpRequest>& requests() const { return requests_; }

 private:
  std::deque<absl::StatusOr<HttpResponse>> script_;
  std::vector<HttpRequest> requests_;
};

}  // namespace hb::testing
