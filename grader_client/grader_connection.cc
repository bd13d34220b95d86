#include "grader_client/grader_connection.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/base/thread_scheduler.h"
#include "grader_client/grpc_grader_client.h"

namespace hb {

absl::StatusOr<GraderTarget> ParseGraderTarget(const std::string& flag) {
  if (flag.empty()) {
    return absl::InvalidArgumentError(
        "--grader is empty: give 'embedded' or the gRPC target of the hb-grader replicas");
  }
  if (flag == kEmbeddedGrader) return GraderTarget{};
  return GraderTarget{GraderTarget::Kind::kRemote, flag};
}

void GraderConnection::Close() {
  if (embedded != nullptr) {
    embedded.reset();  // cancels calls in progress, then stops the HTTP loop
  } else {
    client.reset();
    timers.reset();
  }
}

namespace {

absl::StatusOr<std::unique_ptr<GraderConnection>> ConnectRemote(
    const GraderConnectOptions& options) {
  const std::string& address = options.target.address;
  absl::StatusOr<std::unique_ptr<GrpcGraderClient>> client =
      GrpcGraderClient::Create(address, options.security);
  if (!client.ok()) return absl::InvalidArgumentError(client.status().message());
  const absl::Status ready = (*client)->WaitForReady(options.ready_timeout);
  if (!ready.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no hb-grader replica reachable at ", address, " within ",
                     absl::FormatDuration(options.ready_timeout), ": ", ready.message()));
  }
  HB_ASSIGN_OR_RETURN(std::vector<ReplicaInfo> replicas,
                      AgreedReplicaInfos(address, options.security, options.ready_timeout));
  auto connection = std::make_unique<GraderConnection>();
  connection->client = *std::move(client);
  connection->timers = std::make_unique<ThreadScheduler>();
  connection->info = replicas.front().info;
  for (ReplicaInfo& replica : replicas) connection->replicas.push_back(std::move(replica.replica));
  return connection;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GraderConnection>> ConnectGrader(
    const GraderConnectOptions& options) {
  if (!options.target.embedded()) return ConnectRemote(options);
  auto connection = std::make_unique<GraderConnection>();
  HB_ASSIGN_OR_RETURN(connection->embedded, EmbeddedGrader::Start(options.stack));
  HB_LOG_INFO("embedded grader in process (upstream {})", connection->embedded->upstream_url());
  connection->info = connection->embedded->info();
  return connection;
}

}  // namespace hb
