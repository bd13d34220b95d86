// GraderServer: the grader gRPC server as a library (hb-grader's main and the orchestrator's
// embedded grader run the same code): the Grader service over a libcurl-backed OpenAI client,
// the standard health service (SERVING for "" and for "healthbench.grader.v1.Grader" until
// Shutdown) and, when asked for, server reflection. Takes an options struct; knows no flags.
// A request whose bytes do not parse as the method's request message fails with
// INVALID_ARGUMENT ("malformed request for <method>: ..."), not gRPC's bare UNIMPLEMENTED.
//
//   HB_ASSIGN_OR_RETURN(auto server, GraderServer::Start(options));
//   ... server->port() ...
//   server->Shutdown(absl::Seconds(30));
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/rate_limited_log.h"
#include "common/base/thread_scheduler.h"
#include "common/healthbench/types.h"
#include "common/retry/retry_policy.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "grader_service/grader_server_options.h"
#include "prometheus/registry.h"
#include "security/transport_security.h"

namespace grpc {
class Server;
}

namespace hb {

class GraderStack;
class GraderServiceImpl;

class GraderServer {
 public:
  // Loads the template, starts the HTTP loop and the gRPC server. Errors: the template's load
  // errors (kNotFound, kInvalidArgument for a wrong sha256), kUnavailable when the address
  // cannot be bound ("grader: could not listen on <address>: ..."; the port is never shared
  // with another process: SO_REUSEPORT is off), kInternal when libcurl cannot start.
  static absl::StatusOr<std::unique_ptr<GraderServer>> Start(const GraderServerOptions& options);

  // Shuts down (with no drain) if Shutdown was not called.
  ~GraderServer();

  // The bound port.
  int port() const { return port_; }

  // Reports NOT_SERVING on the health service, stops accepting RPCs, lets RPCs in progress
  // finish for up to `drain`, then cancels the rest (their upstream calls are cancelled too).
  // Idempotent; thread-safe; must not be called from an RPC callback.
  void Shutdown(absl::Duration drain);

  // Blocks until Shutdown has completed.
  void Wait();

  GraderMetrics& metrics();
  // The log of refused requests (malformed bytes included): at most 5 lines per kind per 10 s.
  RateLimitedLog& refused_log();
  prometheus::Registry& registry() { return *registry_; }
  hb::Grader& grader();

 private:
  GraderServer() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<GraderStack> stack_;
  // GradeReply's scoring, off the upstream event loop (GraderServiceOptions::completions).
  std::unique_ptr<ThreadScheduler> completions_;
  BearerTokens tokens_;  // checked by service_
  std::unique_ptr<GraderServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
