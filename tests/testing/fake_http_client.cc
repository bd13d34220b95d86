#include "tests/testing/fake_http_client.h"

namespace hb::testing {

HttpResponse MakeHttpResponse(int status, std::string body,
                              std::vector<std::pair<std::string, std::string>> headers) {
  HttpResponse response;
  response.status_code = status;
  response.body = std::move(body);
  response.headers = std::move(headers);
  return response;
}

HttpClient::CallId FakeHttpClient::Post(HttpRequest request, HttpCallback done) {
  return calls_.Hold(std::move(request), std::move(done));
}

void FakeHttpClient::Cancel(CallId id) { calls_.Cancel(id); }

size_t FakeHttpClient::pending() const { return calls_.pending(); }

std::vector<HttpRequest> FakeHttpClient::requests() const { return calls_.requests(); }

std::vector<HttpClient::CallId> FakeHttpClient::cancelled() const { return calls_.cancelled(); }

bool FakeHttpClient::RespondNext(absl::StatusOr<HttpResponse> response) {
  return calls_.CompleteNext(std::move(response));
}

}  // namespace hb::testing
