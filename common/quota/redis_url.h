// Where the fleet's Redis is (--quota-redis): "redis://[[user]:password@]host[:port][/db]" or
// "unix:///path/to/redis.sock[?db=N]". Parsing needs no Redis client.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

struct RedisEndpoint {
  // TCP host and port (when unix_path is empty).
  std::string host;
  int port = 6379;
  std::string unix_path;
  // AUTH credentials; empty: none. Never logged.
  std::string username;
  std::string password;
  int db = 0;
};

// Errors: kInvalidArgument saying what is wrong and the accepted forms; the message never
// contains the password (nor the URL, which may hold it).
absl::StatusOr<RedisEndpoint> ParseRedisUrl(absl::string_view url);

// The endpoint without credentials, for logs: "redis://host:port/db" or "unix:///path?db=N".
std::string RedisEndpointName(const RedisEndpoint& endpoint);

}  // namespace hb
