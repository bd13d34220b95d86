#include "llm/endpoint_preflight.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/base/host_port.h"
#include "http/url_redaction.h"
#include "rapidjson/document.h"
#include "security/transport_security.h"

namespace hb {
namespace {

bool EnvSet(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

absl::Status ResolveHost(const std::string& host, absl::Duration timeout) {
  // getaddrinfo cannot be cancelled: it runs on a thread of its own, which outlives a timeout
  // (and then only writes the shared state).
  struct State {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    int result ABSL_GUARDED_BY(mu) = 0;
    int error ABSL_GUARDED_BY(mu) = 0;  // errno for EAI_SYSTEM
  };
  auto state = std::make_shared<State>();
  std::thread([state, host] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int result = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
    const int error = errno;
    if (found != nullptr) ::freeaddrinfo(found);
    absl::MutexLock lock(&state->mu);
    state->result = result;
    state->error = error;
    state->done = true;
  }).detach();
  absl::MutexLock lock(&state->mu);
  if (!state->mu.AwaitWithTimeout(absl::Condition(&state->done), timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("no answer from the resolver within ", absl::FormatDuration(timeout)));
  }
  if (state->result == 0) return absl::OkStatus();
  return absl::NotFoundError(state->result == EAI_SYSTEM ? std::strerror(state->error)
                                                         : ::gai_strerror(state->result));
}

std::string UrlHost(absl::string_view base_url) {
  return std::string(BareHostOf(UrlHostPort(base_url)));
}

bool EndpointNeedsApiKey(absl::string_view base_url) {
  return absl::StartsWithIgnoreCase(base_url, "https://") &&
         !IsLoopbackAddress(UrlHostPort(base_url));
}

bool EndpointUsesProxy(absl::string_view base_url) {
  if (EnvSet("ALL_PROXY") || EnvSet("all_proxy")) return true;
  if (absl::StartsWithIgnoreCase(base_url, "https://")) {
    return EnvSet("https_proxy") || EnvSet("HTTPS_PROXY");
  }
  // libcurl reads only the lower-case http_proxy (the upper-case one is a CGI hazard).
  return EnvSet("http_proxy");
}

absl::Status PreflightEndpoint(const EndpointPreflight& endpoint, const HostResolver& resolve) {
  const std::string url = RedactUrl(endpoint.base_url);
  const std::string which =
      endpoint.url_is_default ? absl::StrCat("the default ", endpoint.url_flag) : endpoint.url_flag;
  if (!endpoint.has_api_key && EndpointNeedsApiKey(endpoint.base_url)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no API key for ", url, " (", which, "): set ", endpoint.key_source, ", or give ",
        endpoint.url_flag,
        " a server that needs none (on this machine, or plain http:// inside the cluster: vLLM, "
        "hb-llm-sim); an https server that takes no key accepts any placeholder key"));
  }
  const std::string host = UrlHost(endpoint.base_url);
  if (host.empty() || EndpointUsesProxy(endpoint.base_url)) return absl::OkStatus();
  if (absl::Status resolved = resolve(host); !resolved.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot resolve host '", host, "' of ", which, " ", url, ": ",
                     resolved.message(), ". Check the host name in ", endpoint.url_flag,
                     ", and this machine's DNS and network (no request was sent)"));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<HttpResponse> GetBlocking(HttpClient& http, HttpRequest request) {
  absl::Notification done;
  absl::StatusOr<HttpResponse> result;
  http.Post(std::move(request), [&](absl::StatusOr<HttpResponse> r) {
    result = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

// The start of a response body for a message: one line, at most 160 bytes.
std::string BodyExcerpt(const std::string& body) {
  std::string excerpt = absl::StrReplaceAll(body.substr(0, 160), {{"\n", " "}, {"\r", " "}});
  if (body.size() > 160) absl::StrAppend(&excerpt, "...");
  return excerpt;
}

bool IsJsonObject(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  return !doc.HasParseError() && doc.IsObject();
}

}  // namespace

absl::StatusOr<std::string> ProbeEndpoint(const EndpointPreflight& endpoint, HttpClient& http,
                                          absl::Duration timeout) {
  const std::string base(absl::StripSuffix(endpoint.base_url, "/"));
  const std::string url = RedactUrl(absl::StrCat(base, "/models"));
  const std::string which =
      endpoint.url_is_default ? absl::StrCat("the default ", endpoint.url_flag) : endpoint.url_flag;
  HttpRequest request;
  request.method = "GET";
  request.url = absl::StrCat(base, "/models");
  request.timeout = timeout;
  request.max_response_body_bytes = size_t{4} << 20;
  request.headers.emplace_back("Accept", "application/json");
  if (!endpoint.api_key.empty()) {
    request.headers.emplace_back("Authorization", absl::StrCat("Bearer ", endpoint.api_key));
  }
  for (const auto& header : endpoint.headers) request.headers.push_back(header);
  const absl::StatusOr<HttpResponse> response = GetBlocking(http, std::move(request));
  const std::string refused = absl::StrCat(" No grading request was sent. Fix ", which,
                                           " (or start the server), then run again");
  if (!response.ok()) {
    if (response.status().code() == absl::StatusCode::kDeadlineExceeded) {
      return absl::StrCat("the judge at ", url, " (", which, ") did not answer within ",
                          absl::FormatDuration(timeout), "; grading starts anyway");
    }
    // The key or a header value may be quoted in a transport message: never print them.
    std::string why(response.status().message());
    for (const std::string& secret : {endpoint.api_key}) {
      if (!secret.empty()) why = absl::StrReplaceAll(why, {{secret, "[redacted]"}});
    }
    for (const auto& [name, value] : endpoint.headers) {
      if (!value.empty()) why = absl::StrReplaceAll(why, {{value, "[redacted]"}});
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reach the judge at ", url, " (", which, "): ", why,
                     ". Is the server running, and are the host and port right?", refused));
  }
  const int code = response->status_code;
  const std::string answered =
      absl::StrCat("GET ", url, " (", which, ") answered HTTP ", code, ": ");
  if (code == 401 || code == 403) {
    return absl::FailedPreconditionError(absl::StrCat(
        answered, BodyExcerpt(response->body), ". The judge refused the API key: check ",
        endpoint.key_source, " (and --llm-header for a gateway's key).", refused));
  }
  if (code == 404) {
    return absl::FailedPreconditionError(
        absl::StrCat(answered, BodyExcerpt(response->body),
                     ". This is not an OpenAI-compatible base URL: it usually ends in /v1 "
                     "(https://api.openai.com/v1, http://vllm:8000/v1).",
                     refused));
  }
  if (code >= 200 && code < 300) {
    if (IsJsonObject(response->body)) return std::string();
    return absl::FailedPreconditionError(
        absl::StrCat(answered, "'", BodyExcerpt(response->body),
                     "', which is not JSON: this is not an OpenAI-compatible endpoint.", refused));
  }
  return absl::StrCat(answered, BodyExcerpt(response->body), "; grading starts anyway");
}

}  // namespace hb
