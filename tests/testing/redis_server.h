// RedisServer: a real redis-server (Debian's /usr/bin/redis-server, no fake) for a test: on a
// Unix socket in a MakeTempDir folder (no TCP port at all), without persistence (--save '',
// no AOF), stopped when the object goes. Kill, Restart, Pause and Resume drive the chaos cases.
// Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/testing/loopback.h"

namespace hb::testing {

class RedisServer {
 public:
  // Starts redis-server and waits until it accepts connections. `password`: --requirepass.
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(const std::string& password = "");
  ~RedisServer();

  // "unix://<dir>/redis.sock" (no credentials).
  std::string url() const { return "unix://" + socket_; }
  const std::string& socket_path() const { return socket_; }

  // SIGKILL: gone at once, with its data.
  void Kill();
  // Kills it if running and starts a fresh one on the same socket (empty, no scripts).
  absl::Status Restart();
  // SIGSTOP / SIGCONT: a Redis that stops answering without closing its connections.
  void Pause();
  void Resume();
  // Runs one command on a connection of its own (authenticated); the reply as text (an integer
  // as its digits, an error as "ERR ..."). For SCRIPT FLUSH, HGET and the like.
  absl::StatusOr<std::string> Command(const std::vector<std::string>& words) const;

 private:
  RedisServer() = default;
  absl::Status Launch();

  std::string dir_;
  std::string socket_;
  std::string password_;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace hb::testing
