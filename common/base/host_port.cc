#include "common/base/host_port.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hb {
namespace {

absl::Status Bad(absl::string_view text, const HostPortRules& rules, absl::string_view why) {
  const char* example = rules.min_port == 0
                            ? "127.0.0.1:8080, [::1]:8080 or localhost:0 (port 0 picks a free one)"
                            : "127.0.0.1:8080, [::1]:8080 or localhost:8080";
  return absl::InvalidArgumentError(
      absl::StrCat(rules.name, " must be host:port, got '", text, "': ", why, "; e.g. ", example));
}

// The port digits after the host; empty `digits` takes the default when there is one.
absl::Status ParsePort(absl::string_view digits, absl::string_view text, const HostPortRules& rules,
                       int* port) {
  if (digits.empty()) {
    if (rules.default_port >= 0) {
      *port = rules.default_port;
      return absl::OkStatus();
    }
    return Bad(text, rules, "it has no port");
  }
  int value = 0;
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) || value > 65535) {
      value = -1;
      break;
    }
    value = value * 10 + (c - '0');
  }
  if (value < rules.min_port || value > 65535) {
    return Bad(text, rules,
               absl::StrCat("the port is not a number in ", rules.min_port, "..65535"));
  }
  *port = value;
  return absl::OkStatus();
}

}  // namespace

std::string HostPort::DisplayHost() const {
  return bracketed ? absl::StrCat("[", host, "]") : host;
}

std::string HostPort::ToString() const { return absl::StrCat(DisplayHost(), ":", port); }

HostPortRules ListenRules(absl::string_view flag) {
  HostPortRules rules;
  rules.name = flag;
  rules.min_port = 0;
  return rules;
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, const HostPortRules& rules) {
  if (text.empty()) return Bad(text, rules, "it is empty");
  HostPort out;
  absl::string_view port_digits;
  bool has_colon = false;
  if (absl::StartsWith(text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) return Bad(text, rules, "'[' without ']'");
    out.host = std::string(text.substr(1, close - 1));
    out.bracketed = true;
    absl::string_view after = text.substr(close + 1);
    has_colon = absl::ConsumePrefix(&after, ":");
    if (!after.empty() && !has_colon) return Bad(text, rules, "text after ']' is not ':PORT'");
    port_digits = after;
  } else {
    const size_t colon = text.rfind(':');
    has_colon = colon != absl::string_view::npos;
    out.host = std::string(text.substr(0, colon));
    if (has_colon) port_digits = text.substr(colon + 1);
    if (absl::StrContains(out.host, ':')) {
      return Bad(text, rules, "an IPv6 host goes in brackets");
    }
  }
  if (has_colon && port_digits.empty()) return Bad(text, rules, "it has no port after ':'");
  if (out.host.empty() && !(rules.empty_host_ok && has_colon)) {
    return Bad(text, rules, "it has no host");
  }
  for (char c : out.host) {
    if (c == '/' || c == '[' || c == ']' || absl::ascii_isspace(static_cast<unsigned char>(c))) {
      return Bad(text, rules, absl::StrCat("the host holds '", std::string(1, c), "'"));
    }
  }
  if (absl::Status s = ParsePort(port_digits, text, rules, &out.port); !s.ok()) return s;
  return out;
}

absl::string_view HostPartOf(absl::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return text;
  if (absl::StartsWith(text, "[") && text.find(']') > colon) return text;  // "[::1]" alone
  return text.substr(0, colon);
}

absl::string_view BareHostOf(absl::string_view text) {
  absl::string_view host = HostPartOf(text);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return host;
}

}  // namespace hb
