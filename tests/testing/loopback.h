// Loopback servers for tests that need real sockets on 127.0.0.1:
//  - LoopbackHttpServer: a tiny in-process HTTP/1.1 server (libevent evhttp, read through
//    BoundedEvhttp like every listener of the project: BoundedEvhttp's limits but a 256 MiB
//    body) that records every request (method, path, headers, body, peer port) and answers
//    from a handler; for checking exactly what a client sends, keep-alive reuse, timeouts and
//    cancellation.
//  - ConnectLoopback: a raw client socket, for tests that speak HTTP byte by byte.
//  - ChildProcess / StartLlmSim: the real `hb-llm-sim` binary as a child process, killed when
//    the handle is destroyed.
//  - RunProcess: a binary run to its exit, with its stdout and stderr.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace hb::testing {

// A TCP socket connected to 127.0.0.1:`port` whose reads block for at most 30 s (a guard
// against a hung test, never a synchronisation). The caller closes it. A failed connect fails
// the current test (EXPECT) and still returns the socket.
int ConnectLoopback(int port);

struct LoopbackRequest {
  std::string method;
  std::string uri;
  // As received (names as the client spelled them).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // The client's source port: requests from one connection share it.
  int peer_port = 0;

  // First header whose name matches case-insensitively, or "" when absent.
  std::string Header(const std::string& name) const;
};

struct LoopbackResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // Answer after this long (an event-loop timer, never a sleep).
  absl::Duration delay = absl::ZeroDuration();
  // Never answer (the client must time out or cancel).
  bool hang = false;
};

class LoopbackHttpServer {
 public:
  // Runs on the server's thread; must not block.
  using Handler = std::function<LoopbackResponse(const LoopbackRequest&)>;

  // Listens on 127.0.0.1:0. kInternal when libevent fails.
  static absl::StatusOr<std::unique_ptr<LoopbackHttpServer>> Start(Handler handler);
  ~LoopbackHttpServer();

  int port() const { return port_; }
  // "http://127.0.0.1:<port>"
  std::string base_url() const;
  std::vector<LoopbackRequest> requests() const;
  // Waits until at least `n` requests arrived; false on timeout.
  bool WaitForRequests(size_t n, absl::Duration timeout) const;

  struct Impl;

 private:
  LoopbackHttpServer() = default;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// A child process with its stdout on a pipe.
class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`; stdout is captured, stderr inherited.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv);
  // SIGKILLs (if still running) and reaps the child.
  ~ChildProcess();

  // The first line of stdout (without '\n'); kDeadlineExceeded after `timeout`, kUnavailable
  // when the child exits first.
  absl::StatusOr<std::string> ReadFirstLine(absl::Duration timeout);
  // The first `n` lines of stdout (e.g. hb-env's "grpc listening on" and "http listening on");
  // errors as ReadFirstLine. Call once, instead of ReadFirstLine.
  absl::StatusOr<std::vector<std::string>> ReadFirstLines(size_t n, absl::Duration timeout);
  // Reads stdout up to the first line containing `needle` and returns it (then keeps draining);
  // errors as ReadFirstLine. Call once, instead of ReadFirstLine.
  absl::StatusOr<std::string> ReadUntilLineContaining(absl::string_view needle,
                                                      absl::Duration timeout);
  // Sends `signal` and waits up to `timeout` for the exit; returns the wait status or -1.
  int Stop(int signal, absl::Duration timeout);
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  // Reads lines until `enough(lines)`, then drains stdout on a thread.
  absl::StatusOr<std::vector<std::string>> ReadLines(
      const std::function<bool(const std::vector<std::string>&)>& enough, absl::Duration timeout);
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  std::thread drain_;
  bool reaped_ = false;
};

struct ProcessResult {
  // The exit status; -1 when the process was killed by a signal (or by the timeout).
  int exit_code = -1;
  std::string out, err;
};

// Runs `argv[0]` with `argv`, `env` added in front of this process's environment (so that
// "OPENAI_API_KEY=" overrides it), and waits for its exit; stdout and stderr are captured through
// files. A process still running after `timeout` is killed (SIGKILL) and fails the current test.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {},
                         absl::Duration timeout = absl::Minutes(2));

// A running `hb-llm-sim` (from BinaryDir()/simulator/hb-llm-sim) on 127.0.0.1:0 with `flags`
// (e.g. {"--fault-503=0.1"}).
struct LlmSim {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
  // "http://127.0.0.1:<port>/v1"
  std::string base_url;
};
absl::StatusOr<LlmSim> StartLlmSim(const std::vector<std::string>& flags);

// A running `hb-grader` replica (BinaryDir()/grader_service/hb-grader) on 127.0.0.1:0 against
// `sim`, with the reference template, no metrics listener and `flags` added.
struct GraderReplica {
  std::unique_ptr<ChildProcess> process;
  int port = 0;
  // "ipv4:127.0.0.1:<port>", as --grader takes it.
  std::string target;
};
absl::StatusOr<GraderReplica> StartGrader(const LlmSim& sim, const std::vector<std::string>& flags);

// One counter of the simulator's GET /metrics ("hb_sim_requests_total": the grader and policy
// requests it answered), -1 when unreadable.
int64_t SimCounter(const LlmSim& sim, const std::string& name);

// The value of one series in GET http://127.0.0.1:`port`/metrics, `name` as exposed with its
// labels (e.g. `hb_orchestrator_checkpoints_total{state="graded"}`), truncated to an integer;
// -1 when unreadable or absent.
int64_t MetricsValue(int port, const std::string& name);

// Connections to 127.0.0.1:`port` that the client closed and the server has not closed yet
// (TCP CLOSE_WAIT, read from /proc/net/tcp; another test's IPv6 server on the same port number
// is not counted: ctest runs tests side by side). After a client is killed, 0 means the
// server has read everything the client sent: it reads a connection to its end before closing
// it, and on loopback the client's bytes are in the server's buffer when the client dies.
int HalfClosedConnections(int port);

}  // namespace hb::testing
