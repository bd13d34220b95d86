#include "http/curl_easy_options.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/match.h"
#include "absl/time/time.h"

namespace hb {

void SetCurlConnectionOptions(CURL* easy, const CurlHttpClientOptions& options,
                              const HttpRequest& req) {
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(
      easy, CURLOPT_BUFFERSIZE,
      static_cast<long>(std::clamp(options.receive_buffer_bytes, 1024, CURL_MAX_READ_SIZE)));
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  if (absl::StartsWithIgnoreCase(req.url, "https://")) {
    // Wait for a multiplexable connection instead of opening a new one per request.
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
  }
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(easy, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options.connect_timeout)));
  int64_t timeout_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(req.timeout));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
}

}  // namespace hb
