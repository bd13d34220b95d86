// HttpClient: the asynchronous HTTP transport under the LLM client. The implementation is
// CurlMultiHttpClient (curl_http_client.h: libcurl, with plain http:// through its own HTTP/1.1
// path, plain_http1.h); tests use hb::testing::FakeHttpClient.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hb {

// A piece of a streamed request body: the bytes of `data` (shared, not copied: many requests
// may send the same piece), or the whole content of the file at `file_path` (read while
// sending, never held in memory) when that is non-empty.
struct HttpBodyPart {
  std::shared_ptr<const std::string> data;
  std::string file_path;

  static HttpBodyPart Bytes(std::string bytes) {
    return HttpBodyPart{std::make_shared<const std::string>(std::move(bytes)), ""};
  }
  static HttpBodyPart Shared(std::shared_ptr<const std::string> bytes) {
    return HttpBodyPart{std::move(bytes), ""};
  }
  static HttpBodyPart File(std::string path) { return HttpBodyPart{nullptr, std::move(path)}; }
};

// One request (POST unless `method` says otherwise).
struct HttpRequest {
  std::string url;
  // "POST" (the default) or "GET" (sends no body).
  std::string method = "POST";
  // Extra request headers, sent as given (e.g. {"Content-Type", "application/json"}).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // When non-empty, the POST body is these parts in order, streamed (`body` is ignored): how a
  // multipart upload of a file of hundreds of MB goes out without loading it, and how the
  // rubric items of one reply send its conversation without a copy each. A file that cannot
  // be read fails the request with kFailedPrecondition naming it.
  std::vector<HttpBodyPart> body_parts;
  // Whole-request timeout (connect + send + wait + receive).
  absl::Duration timeout = absl::Seconds(120);
  // Largest response body kept for this request; 0: the client's own limit (e.g. a file
  // download may allow more than a chat completion).
  size_t max_response_body_bytes = 0;
};

// A complete HTTP response, whatever its status code.
struct HttpResponse {
  int status_code = 0;
  // Response headers in arrival order, names lowercased, values trimmed.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Time from submission to the last byte.
  absl::Duration latency = absl::ZeroDuration();

  // The value of the first header called `name` (lowercase), or nullptr.
  const std::string* Header(absl::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return &value;
    }
    return nullptr;
  }
};

// Receives the outcome of one request, exactly once. An HTTP error status (4xx, 5xx) is an OK
// response; errors are transport failures: kUnavailable (connection refused or reset, DNS, TLS
// handshake, empty reply), kDeadlineExceeded (the request's timeout), kCancelled (Cancel or
// client shutdown), kFailedPrecondition (TLS certificate rejected), kInvalidArgument (bad URL).
using HttpCallback = absl::AnyInvocable<void(absl::StatusOr<HttpResponse>)>;

class HttpClient {
 public:
  // 0 is never a valid id.
  using CallId = uint64_t;

  virtual ~HttpClient() = default;

  // Starts `request` (despite the name, any method of HttpRequest); `done` runs once on the
  // client's thread (never inline, except after shutdown, when it runs inline with kCancelled).
  // `done` must not block. Thread-safe.
  virtual CallId Post(HttpRequest request, HttpCallback done) = 0;

  // Aborts a request in progress: its `done` runs with kCancelled unless it has completed
  // already (then nothing happens). Thread-safe; never runs `done` inline.
  virtual void Cancel(CallId id) = 0;
};

}  // namespace hb
