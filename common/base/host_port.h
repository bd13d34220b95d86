// The one HOST:PORT parser: listen flags, gRPC targets, Redis and HTTP authorities.
//
// Forms: "127.0.0.1:8080", "[::1]:8080" (an IPv6 host goes in brackets), "localhost:8080",
// "grader-0.grader:50051". Errors name what was parsed (a flag such as "--listen", or a field)
// and show an example, so the message alone says how to fix the value.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

// A parsed HOST:PORT. `host` carries no brackets ("::1", "127.0.0.1", "localhost"; empty only
// when HostPortRules::empty_host_ok allowed it).
struct HostPort {
  std::string host;
  int port = 0;
  bool bracketed = false;  // written as "[host]" (an IPv6 literal)

  // `host` as written: in brackets when it was ("[::1]"), for messages and authorities.
  std::string DisplayHost() const;
  // "host:port" as written ("[::1]:8080").
  std::string ToString() const;
};

// What a caller accepts. The defaults fit a target to connect to: host required, port 1..65535.
struct HostPortRules {
  // What errors name: a flag ("--listen") or a field ("grader target").
  absl::string_view name = "address";
  // 0 for listen addresses (port 0 picks a free port).
  int min_port = 1;
  // >= 0: the port may be left out ("redis://cache" means 6379) and is then this.
  int default_port = -1;
  // ":8080" is accepted with an empty host (a listener's "all interfaces").
  bool empty_host_ok = false;
};

// The rules of a listen flag: port 0 picks a free port, the host is required.
HostPortRules ListenRules(absl::string_view flag);

// Parses `text` under `rules`. kInvalidArgument naming `rules.name`, the text, what is wrong
// (no port, port not a number in range, no host, an IPv6 host without brackets, white space or
// '/' in the host) and an example of the accepted form.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, const HostPortRules& rules = {});

// The host of "HOST:PORT" as written, brackets kept ("[::1]:0" -> "[::1]"); text without a
// port is returned whole. For messages about an address already accepted (never fails).
absl::string_view HostPartOf(absl::string_view text);

// The host of "HOST:PORT" (or of a HOST alone) without brackets ("[::1]:0" -> "::1"), for
// comparing or resolving it; never fails.
absl::string_view BareHostOf(absl::string_view text);

}  // namespace hb
