// GrpcGraderClient: GraderClient over gRPC's callback API (no thread per call), load-balanced
// round_robin over every address the target resolves to, with gRPC-level retries of
// UNAVAILABLE on another replica and HTTP/2 keep-alive.
//
//   HB_ASSIGN_OR_RETURN(auto client, GrpcGraderClient::Create("dns:///grader-headless:50051"));
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grader/grader_info.h"
#include "grader_client/grader_client.h"
#include "grpcpp/channel.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"
#include "security/transport_security.h"

namespace hb {

// The channel's service config: round_robin, and up to 3 attempts (0.2 s, 0.4 s, ... up to
// 2 s backoff) of UNAVAILABLE for every method of healthbench.grader.v1.Grader.
inline constexpr char kGraderServiceConfig[] =
    R"({"loadBalancingConfig":[{"round_robin":{}}],)"
    R"("methodConfig":[{"name":[{"service":"healthbench.grader.v1.Grader"}],)"
    R"("retryPolicy":{"maxAttempts":3,"initialBackoff":"0.2s","maxBackoff":"2s",)"
    R"("backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}]})";

// Creates the channel for `target` with kGraderServiceConfig and keep-alive arguments
// (ping every 30 s, 10 s timeout), over `credentials` (plaintext when null).
// `target` is any gRPC target: "dns:///grader-headless:50051" (a headless Service: one
// address per pod), "ipv4:127.0.0.1:50051,127.0.0.1:50052", "127.0.0.1:50051".
// kInvalidArgument for an empty target.
// `authority`, when not empty, is the name the server is checked against over TLS and sent as
// :authority (a replica reached by its address, see ReplicaTargets).
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateGraderChannel(
    const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
    const std::string& authority = "");

// One replica behind a target: a gRPC target reaching only it, and the authority to present.
struct ReplicaTarget {
  std::string target;     // "ipv4:10.0.0.7:50051", "ipv6:[::1]:50051", or the target itself
  std::string authority;  // "grader-headless:50051" when resolved from a name, else ""
};

// The replicas behind `target`: each address of an "ipv4:"/"ipv6:" list; each address a DNS
// name resolves to now ("dns:///name:port", "dns:name:port", "name:port"); any other scheme
// (unix:, xds:, ...) as one replica. kInvalidArgument for an empty target or a name without a
// port; kUnavailable when the name does not resolve.
absl::StatusOr<std::vector<ReplicaTarget>> ReplicaTargets(const std::string& target);

// GetInfo from every replica behind `target` (ReplicaTargets), each with its own channel and
// `timeout`, with the TLS and token of `security`. A replica that is unreachable now
// (UNAVAILABLE, DEADLINE_EXCEEDED) is left out and named in `unreachable` (optional); any
// other error (kUnauthenticated, kUnimplemented from an older hb-grader, ...) is returned
// naming the replica. kUnavailable when no replica answered.
absl::StatusOr<std::vector<ReplicaInfo>> GetInfoFromEveryReplica(
    const std::string& target, const ClientSecurityOptions& security, absl::Duration timeout,
    std::vector<std::string>* unreachable = nullptr);

// What every replica behind `target` grades with, checked to agree: GetInfoFromEveryReplica,
// then CheckGradersAgree. Logs a warning per unreachable replica and per informational
// difference (upstream, version), and one info line with the settings. Errors:
// kFailedPrecondition "cannot check the graders' settings: <why>" when no replica answers or
// one cannot answer GetInfo (a wrong token included), CheckGradersAgree's kFailedPrecondition
// when they disagree.
absl::StatusOr<std::vector<ReplicaInfo>> AgreedReplicaInfos(const std::string& target,
                                                            const ClientSecurityOptions& security,
                                                            absl::Duration timeout);

class GrpcGraderClient final : public GraderClient {
 public:
  // A client on CreateGraderChannel(target) with the TLS and token of `security`
  // (security/transport_security.h). Errors: kInvalidArgument for an empty target; the
  // credential files' errors of MakeClientCredentials.
  static absl::StatusOr<std::unique_ptr<GrpcGraderClient>> Create(
      const std::string& target, const ClientSecurityOptions& security = {});

  // Calls go through `channel`; the client shares its ownership. `token`, when not empty, is
  // sent on every call as `authorization: Bearer <token>`.
  explicit GrpcGraderClient(std::shared_ptr<grpc::Channel> channel, std::string token = "");
  // Cancels outstanding calls and waits for their callbacks to finish.
  ~GrpcGraderClient() override;

  // Sends with wait_for_ready, so a call made while no replica is ready waits (up to its
  // deadline) instead of failing at once: replicas may still be starting.
  void GradeItem(const healthbench::grader::v1::GradeItemRequest& request, absl::Duration timeout,
                 Callback done) override;
  void CancelAll() override;
  // One replica's answer (round_robin picks it).
  absl::StatusOr<healthbench::grader::v1::GraderInfo> GetInfo(absl::Duration timeout) override;

  // Waits up to `timeout` for the channel to connect to at least one replica.
  // kUnavailable naming the channel state when it did not.
  absl::Status WaitForReady(absl::Duration timeout);

 private:
  struct Call;
  // Outstanding calls, shared with their reactions.
  struct State {
    absl::Mutex mu;
    absl::CondVar idle_cv;
    // Calls that can still be cancelled.
    absl::flat_hash_set<Call*> calls ABSL_GUARDED_BY(mu);
    // Calls whose Call object (and its ClientContext) is not destroyed yet.
    int64_t outstanding ABSL_GUARDED_BY(mu) = 0;
  };
  std::shared_ptr<grpc::Channel> channel_;
  const std::string token_;
  std::unique_ptr<healthbench::grader::v1::Grader::Stub> stub_;
  std::shared_ptr<State> state_;
};

}  // namespace hb
