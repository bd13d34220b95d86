// FakeHttpClient: an HttpClient whose requests wait until the test answers them. For the
// OpenAI protocol tests (headers sent, status mapping, parsing) without sockets.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "http/http_client.h"
#include "tests/testing/pending_calls.h"

namespace hb::testing {

// A response with `status`, `body` and optional headers (names lowercase).
HttpResponse MakeHttpResponse(int status, std::string body,
                              std::vector<std::pair<std::string, std::string>> headers = {});

class FakeHttpClient final : public HttpClient {
 public:
  CallId Post(HttpRequest request, HttpCallback done) override;
  // Completes the request with kCancelled (inline) when it is still pending.
  void Cancel(CallId id) override;

  size_t pending() const;
  std::vector<HttpRequest> requests() const;
  std::vector<CallId> cancelled() const;
  // Answers the oldest pending request; false when none.
  bool RespondNext(absl::StatusOr<HttpResponse> response);

 private:
  PendingCalls<HttpRequest, HttpCallback> calls_;
};

}  // namespace hb::testing
