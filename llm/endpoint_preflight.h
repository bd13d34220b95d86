// The preflight of an OpenAI-compatible endpoint: what can be known about it before the first
// request, checked at once so that a job that cannot work says why within seconds instead of
// showing progress (and an ETA) until its first requests fail. One place for every endpoint a
// command calls: the grader's upstream (grader/grader_stack_options.h LlmEndpoint; checked by
// `run`, hb-grader and hb-env's embedded grader at start) and a policy's
// (orchestrator/commands/sample_command.h PolicyEndpoint).
//
//   HB_RETURN_IF_ERROR(PreflightEndpoint(endpoint));  // before any request
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "http/http_client.h"

namespace hb {

// An endpoint as the user configured it, with the names the messages give its settings.
struct EndpointPreflight {
  // E.g. "https://api.openai.com/v1" (requests go to base_url/chat/completions).
  std::string base_url;
  // Whether an API key is configured (the key itself is never needed here).
  bool has_api_key = false;
  // The flag that set base_url, as the messages name it ("--llm-base-url",
  // "--policy base=MODEL@URL").
  std::string url_flag;
  // base_url is the flag's default, not a value the user gave.
  bool url_is_default = false;
  // Where the key comes from, as the messages name it ("$OPENAI_API_KEY or
  // --llm-api-key-file").
  std::string key_source;
  // For ProbeEndpoint only: the key (sent as a bearer token; never in a message) and the extra
  // headers of every request (--llm-header; values never in a message).
  std::string api_key;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Resolves a host name: OK when it has an address, else an error whose message says why
// (the resolver's own text). Called with a host, never with a URL.
using HostResolver = std::function<absl::Status(const std::string& host)>;

// getaddrinfo(host), waited for at most `timeout` (a resolver whose DNS server does not answer
// takes 10 s or more; a timeout is an error "no answer within 5s"). Thread-safe.
absl::Status ResolveHost(const std::string& host, absl::Duration timeout = absl::Seconds(5));

// The host of `base_url` without port or brackets ("api.openai.com", "127.0.0.1", "::1"), ""
// when it has none.
std::string UrlHost(absl::string_view base_url);

// Whether requests to `base_url` need an API key: https:// to a host that is not this machine
// (hosted APIs). Loopback endpoints (vLLM or hb-llm-sim on 127.0.0.1, localhost, ::1) and plain
// http:// ones (a server inside the cluster) are served without one.
bool EndpointNeedsApiKey(absl::string_view base_url);

// Whether libcurl will reach `base_url` through a proxy ($https_proxy, $HTTPS_PROXY,
// $http_proxy, $ALL_PROXY or $all_proxy set for its scheme): the proxy then resolves the host,
// which this machine may not be able to.
bool EndpointUsesProxy(absl::string_view base_url);

// Checks, in this order, without sending anything to the endpoint:
//  1. an API key is configured when the endpoint needs one (EndpointNeedsApiKey);
//  2. the host resolves (`resolve`; skipped when a proxy resolves it, EndpointUsesProxy).
// Errors: kFailedPrecondition (exit 2) whose message names the URL (redacted), the flag, what
// is wrong and how to fix it:
//   "no API key for https://api.openai.com/v1 (the default --llm-base-url): set
//    $OPENAI_API_KEY or --llm-api-key-file, or give --llm-base-url a local server ..."
//   "cannot resolve host 'nothing.invalid' of --llm-base-url https://nothing.invalid/v1: ..."
// Thread-safe when `resolve` is.
absl::Status PreflightEndpoint(
    const EndpointPreflight& endpoint,
    const HostResolver& resolve = [](const std::string& host) { return ResolveHost(host); });

// The start-up probe: one GET {base_url}/models with the key and headers (OpenAI's model list;
// it generates nothing and costs nothing), answered within `timeout`, so that a judge that cannot
// work says why at once instead of after every row's retries. kFailedPrecondition (exit 2)
// naming the URL (redacted) and the flag, saying that no grading request was sent, when:
//  - nothing answers: connection refused, host unknown, not HTTP ("cannot reach ...: is the
//    server running, and is the port right?");
//  - the key is refused: HTTP 401 or 403 ("... refused the API key ...: check
//    $OPENAI_API_KEY or --llm-api-key-file");
//  - the URL is wrong: HTTP 404 ("... is not an OpenAI-compatible base URL (it usually ends in
//    /v1)");
//  - the answer is not JSON: a web page, another protocol ("... is not an OpenAI-compatible
//    endpoint").
// Anything else is no reason to stop: a 5xx or 429 (a passing outage: grading retries it), no
// answer within `timeout` (a busy server), another 4xx (a gateway without the model list).
// Then the result is a one-line warning to print; "" when the endpoint answered as an
// OpenAI-compatible one. Blocks up to `timeout`. Thread-safe.
absl::StatusOr<std::string> ProbeEndpoint(const EndpointPreflight& endpoint, HttpClient& http,
                                          absl::Duration timeout = absl::Seconds(5));

}  // namespace hb
