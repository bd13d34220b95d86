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
#include "common/healthbench/types.h"
#include "common/retry/retry_policy.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "prometheus/registry.h"

namespace grpc {
class Server;
}

namespace hb {

class CurlMultiHttpClient;
class OpenAiLlmClient;
class GraderServiceImpl;

// How the upstream model is reached.
struct LlmOptions {
  std::string base_url = "https://api.openai.com/v1";
  // Bearer token; empty sends none (local endpoints). Never logged.
  std::string api_key;
  // Upper bound of one upstream attempt.
  absl::Duration attempt_timeout = absl::Seconds(120);
  // Upstream requests in flight at once; more wait in a queue.
  int max_upstream_in_flight = 2048;
  bool verify_tls = true;
  std::string ca_file;
};

struct GraderServerOptions {
  // "host:port"; port 0 picks a free port (see GraderServer::port()).
  std::string listen_address = "0.0.0.0:50051";
  LlmOptions llm;
  // Model, temperature, max_tokens, system message (SPEC §5 defaults).
  GraderSettings settings;
  RetryPolicy retry;
  GraderLimits limits;
  std::string template_path = "data/grader_template.txt";
  bool require_reference_template = true;
  // Where metrics are registered; a private registry when null.
  std::shared_ptr<prometheus::Registry> registry;
  // Largest request accepted, in bytes.
  int max_receive_message_bytes = 64 << 20;
  // Serve grpc.reflection.v1alpha.ServerReflection (lists the services and their schemas to
  // any client). Off by default.
  bool reflection = false;
};

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

  GraderMetrics& metrics() { return *metrics_; }
  prometheus::Registry& registry() { return *registry_; }
  hb::Grader& grader() { return *grader_; }

 private:
  GraderServer() = default;

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<GraderMetrics> metrics_;
  std::unique_ptr<CurlMultiHttpClient> http_;
  std::unique_ptr<OpenAiLlmClient> llm_;
  std::unique_ptr<hb::Grader> grader_;
  std::unique_ptr<GraderServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace hb
