// EnvGrpcServer: hb-env's gRPC server as a library: the healthbench.env.v1.Environment service
// over an Environment, grpc.health.v1 (overall "" and per service name) and server reflection.
// Refuses a port already bound (no SO_REUSEPORT sharing).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "environment/environment.h"
#include "environment/grpc/env_service.h"
#include "security/transport_security.h"

namespace grpc {
class Server;
}

namespace hb::env {

struct EnvServerOptions {
  // "host:port"; port 0 picks a free port (see port()).
  std::string listen_address = "127.0.0.1:50061";
  // Largest request accepted (a SubmitBatch carries many replies); see ReceiveLimitFor.
  int max_receive_message_bytes = 16 << 20;
  // TLS, mTLS, bearer tokens and the listen policy (security/transport_security.h).
  ServerSecurityOptions security;
  // Serve grpc.reflection (it lists the services to any caller).
  bool reflection = false;
  // Concurrency cap, default deadline and field limits of the service.
  EnvServiceOptions service;
};

// The request size limit for replies of at most `max_reply_bytes`: room for a SubmitBatch of
// 16 typical replies or 2 of the largest (at least 16 MiB, at most 1 GiB). gRPC 1.51 reads a
// bigger request in full before refusing it (grpc/grpc#43012), but never parses it.
int ReceiveLimitFor(size_t max_reply_bytes);

class EnvGrpcServer {
 public:
  // `env` is not owned and must outlive the server. kFailedPrecondition when the listen policy
  // refuses the address (CheckListenPolicy); the credential file errors of
  // MakeServerCredentials; kUnavailable when the address cannot be bound (including a port
  // another process holds).
  static absl::StatusOr<std::unique_ptr<EnvGrpcServer>> Start(Environment& env,
                                                              const EnvServerOptions& options);
  ~EnvGrpcServer();

  int port() const { return port_; }
  // The rate-limited log of refused requests (tests read its suppressed counts).
  RateLimitedLog& refused_log() { return *service_->refused_log(); }

  // Reports NOT_SERVING, stops accepting RPCs, lets RPCs in progress finish for up to `drain`,
  // then cancels the rest. Idempotent; must not be called from an RPC callback.
  void Shutdown(absl::Duration drain);

 private:
  EnvGrpcServer() = default;
  EnvServerOptions options_;  // owns the tokens the service checks
  std::unique_ptr<EnvServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb::env
