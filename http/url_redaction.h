// URL redaction: the one place that makes a URL safe to log, report or send to a peer.
// Credentials can ride in a base URL two ways: the user part (https://user:secret@host/v1) and
// a query parameter (https://host/v1?api-key=secret, Azure's ?sig=...). Every place that shows
// an upstream URL (logs, summary.json, report.html, the grader's GetInfo) passes it through
// RedactUrl first.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace hb {

// `url` with the user part replaced by "[redacted]" and the value of every query parameter
// whose name looks like a credential (contains key, token, secret, password, passwd, sig,
// auth or credential, case-insensitive) replaced by "[redacted]". Everything else (scheme,
// host, port, path, other parameters such as api-version, fragment) is kept byte for byte.
// Not a URL parser: text without "://" only has its query redacted. Thread-safe.
std::string RedactUrl(absl::string_view url);

// Whether RedactUrl would change `url`.
bool UrlHasCredentials(absl::string_view url);

// The host and port of `url` without its user part ("api.openai.com", "127.0.0.1:8000",
// "[::1]:8000"), or "" when `url` has no "://". Feed it to IsLoopbackAddress
// (security/transport_security.h) to ask whether the URL stays on this machine.
std::string UrlHostPort(absl::string_view url);

}  // namespace hb
