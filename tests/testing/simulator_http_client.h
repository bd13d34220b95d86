// SimulatorHttpClient: an HttpClient that hands each request to the simulator's logic
// (hb::sim::Simulator, the routes of hb-llm-sim, Batch API included) and answers inline with its
// reply: the real protocol with no socket. Streamed multipart bodies are read from their files.
// The test links hb::sim_core. Not thread-safe.
#pragma once

#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "common/base/file.h"
#include "http/http_client.h"
#include "simulator/sim_core.h"

namespace hb::testing {

class SimulatorHttpClient final : public HttpClient {
 public:
  explicit SimulatorHttpClient(sim::Simulator& sim) : sim_(sim) {}

  // The request's path from "/v1/" on, its Content-Type and body, to Simulator::Handle.
  CallId Post(HttpRequest request, HttpCallback done) override {
    std::string body = request.body;
    if (!request.body_parts.empty()) {
      body.clear();
      for (const HttpBodyPart& part : request.body_parts) {
        body += part.file_path.empty() ? *part.data : *ReadFile(part.file_path);
      }
    }
    std::string content_type;
    for (const auto& [name, value] : request.headers) {
      if (name == "Content-Type") content_type = value;
    }
    const std::string path = request.url.substr(request.url.find("/v1/"));
    sim::SimHttpRequest r;
    r.method = request.method;
    r.path = absl::string_view(path).substr(0, path.find('?'));
    r.content_type = content_type;
    r.body = body;
    const sim::SimAction action = sim_.Handle(r);
    HttpResponse response;
    response.status_code = action.status;
    response.body = action.body;
    done(std::move(response));
    return ++calls_;
  }
  // Nothing is ever pending.
  void Cancel(CallId) override {}

 private:
  sim::Simulator& sim_;
  CallId calls_ = 0;
};

}  // namespace hb::testing
