// How CurlMultiHttpClient's easy handles connect (internal to curl_http_client.cc): one place
// for the libcurl options every request gets from CurlHttpClientOptions and its own URL and
// timeout.
#pragma once

#include <curl/curl.h>

#include "http/curl_http_client.h"
#include "http/http_client.h"

namespace hb {

// Sets on `easy`, for `req`: http and https only, no redirects, no signals, TCP keep-alive and
// no Nagle, options.receive_buffer_bytes (within libcurl's bounds), HTTP/2 over TLS (waiting for
// a multiplexable connection for https), TLS verification and CA file, the user agent, any
// content encoding, options.connect_timeout and req.timeout (at least 1 ms).
void SetCurlConnectionOptions(CURL* easy, const CurlHttpClientOptions& options,
                              const HttpRequest& req);

}  // namespace hb
