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
  absl::MutexLock lock(&mu_);
  CallId id = ++next_id_;
  requests_.push_back(std::move(request));
  pending_.emplace(id, std::move(done));
  return id;
}

void FakeHttpClient::Cancel(CallId id) {
  HttpCallback done;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    done = std::move(it->second);
    pending_.erase(it);
    cancelled_.push_back(id);
  }
  done(absl::CancelledError("HTTP request cancelled"));
}

size_t FakeHttpClient::pending() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

std::vector<HttpRequest> FakeHttpClient::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

std::vector<HttpClient::CallId> FakeHttpClient::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool FakeHttpClient::RespondNext(absl::StatusOr<HttpResponse> response) {
  HttpCallback done;
  {
    absl::MutexLock lock(&mu_);
    if (pending_.empty()) return false;
    done = std::move(pending_.begin()->second);
    pending_.erase(pending_.begin());
  }
  done(std::move(response));
  return true;
}

}  // namespace hb::testing
