#include "common/quota/redis_url.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/host_port.h"

namespace hb {
namespace {

constexpr char kForms[] =
    "expected redis://[[user]:password@]host[:port][/db] or unix:///path/to/redis.sock[?db=N]";

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("Redis URL: ", what, " (", kForms, ")"));
}

absl::Status ParseDb(absl::string_view text, RedisEndpoint* endpoint) {
  if (text.empty()) return absl::OkStatus();
  if (!absl::SimpleAtoi(text, &endpoint->db) || endpoint->db < 0) {
    return Bad("the database is not a number >= 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<RedisEndpoint> ParseUnix(absl::string_view rest) {
  RedisEndpoint endpoint;
  absl::string_view path = rest;
  const size_t query = rest.find('?');
  if (query != absl::string_view::npos) {
    path = rest.substr(0, query);
    absl::string_view q = rest.substr(query + 1);
    if (!absl::ConsumePrefix(&q, "db=")) return Bad("the only query is ?db=N");
    if (absl::Status s = ParseDb(q, &endpoint); !s.ok()) return s;
  }
  if (!absl::StartsWith(path, "/")) return Bad("a unix socket path must be absolute");
  endpoint.unix_path = std::string(path);
  return endpoint;
}

absl::Status ParseCredentials(absl::string_view userinfo, RedisEndpoint* endpoint) {
  const size_t colon = userinfo.find(':');
  if (colon == absl::string_view::npos) {
    return Bad("credentials are [user]:password@ (the password after a ':')");
  }
  endpoint->username = std::string(userinfo.substr(0, colon));
  endpoint->password = std::string(userinfo.substr(colon + 1));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RedisEndpoint> ParseRedisUrl(absl::string_view url) {
  absl::string_view rest = url;
  if (absl::ConsumePrefix(&rest, "unix://")) return ParseUnix(rest);
  if (absl::StartsWith(url, "rediss://")) return Bad("TLS (rediss://) is not supported");
  if (!absl::ConsumePrefix(&rest, "redis://")) return Bad("unknown scheme");
  RedisEndpoint endpoint;
  const size_t at = rest.rfind('@');
  if (at != absl::string_view::npos) {
    if (absl::Status s = ParseCredentials(rest.substr(0, at), &endpoint); !s.ok()) return s;
    rest = rest.substr(at + 1);
  }
  const size_t slash = rest.find('/');
  absl::string_view hostport = rest.substr(0, slash);
  if (slash != absl::string_view::npos) {
    if (absl::Status s = ParseDb(rest.substr(slash + 1), &endpoint); !s.ok()) return s;
  }
  if (hostport.empty()) return Bad("no host");
  HostPortRules rules;
  rules.name = "its host[:port]";
  rules.default_port = endpoint.port;
  absl::StatusOr<HostPort> parsed = ParseHostPort(hostport, rules);
  if (!parsed.ok()) return Bad(parsed.status().message());
  endpoint.host = std::move(parsed->host);
  endpoint.port = parsed->port;
  return endpoint;
}

std::string RedisEndpointName(const RedisEndpoint& endpoint) {
  if (!endpoint.unix_path.empty()) {
    return absl::StrCat("unix://", endpoint.unix_path, "?db=", endpoint.db);
  }
  return absl::StrCat("redis://", endpoint.host, ":", endpoint.port, "/", endpoint.db);
}

}  // namespace hb
