// RecordingHttpExchange: an hb::HttpExchange without a connection (http/http_server.h) that
// records the replies written through it, for driving an HttpRouteTable without sockets (unit
// tests, the request fuzzer). Deferred exchanges record into the same list. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "http/http_server.h"

namespace hb::testing {

struct RecordedHttpReply {
  int status = 0;
  HttpHeaders headers;
  std::string body;

  // The first header named `name` (exact spelling), or "" when absent.
  std::string Header(const std::string& name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return value;
    }
    return "";
  }
};

class RecordingHttpExchange final : public HttpExchange {
 public:
  RecordingHttpExchange() : replies_(std::make_shared<std::vector<RecordedHttpReply>>()) {}

  void Reply(int status, const HttpHeaders& headers, absl::string_view body) override {
    replies_->push_back({status, headers, std::string(body)});
  }
  std::unique_ptr<HttpExchange> Defer() override {
    return std::unique_ptr<HttpExchange>(new RecordingHttpExchange(replies_));
  }
  evhttp_request* raw() const override { return nullptr; }

  const std::vector<RecordedHttpReply>& replies() const { return *replies_; }

 private:
  explicit RecordingHttpExchange(std::shared_ptr<std::vector<RecordedHttpReply>> replies)
      : replies_(std::move(replies)) {}
  std::shared_ptr<std::vector<RecordedHttpReply>> replies_;
};

}  // namespace hb::testing
