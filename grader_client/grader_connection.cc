#include "grader_client/grader_connection.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/host_port.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/base/thread_scheduler.h"
#include "grader_client/grpc_grader_client.h"

namespace hb {

namespace {

constexpr char kTargetForms[] =
    "'embedded', or the gRPC target of the hb-grader replicas: dns:///HOST:PORT, "
    "ipv4:HOST:PORT[,HOST:PORT...], ipv6:[ADDR]:PORT, unix:PATH or HOST:PORT";

// The schemes gRPC's resolvers take ("dns:///host:port", "ipv4:1.2.3.4:5", "unix:/path").
bool IsGrpcScheme(absl::string_view scheme) {
  for (absl::string_view known : {"dns", "ipv4", "ipv6", "unix", "unix-abstract", "vsock", "xds"}) {
    if (absl::EqualsIgnoreCase(scheme, known)) return true;
  }
  return false;
}

// HOST:PORT or [V6]:PORT with a port in [1, 65535].
bool IsHostPort(absl::string_view text) { return ParseHostPort(text).ok(); }

absl::Status NotATarget(const std::string& flag, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--grader '", flag, "' ", why, ": give ", kTargetForms,
                   ". An OpenAI-compatible URL goes in --llm-base-url "
                   "(graded by --grader embedded, the default)"));
}

}  // namespace

absl::StatusOr<GraderTarget> ParseGraderTarget(const std::string& flag) {
  if (flag.empty()) {
    return absl::InvalidArgumentError(
        "--grader is empty: give 'embedded' or the gRPC target of the hb-grader replicas");
  }
  if (flag == kEmbeddedGrader) return GraderTarget{};
  if (flag.find_first_of(" \t\r\n") != std::string::npos) {
    return NotATarget(flag, "contains white space");
  }
  const size_t colon = flag.find(':');
  const absl::string_view scheme =
      colon == std::string::npos ? absl::string_view() : absl::string_view(flag).substr(0, colon);
  if (absl::EqualsIgnoreCase(scheme, "http") || absl::EqualsIgnoreCase(scheme, "https")) {
    return NotATarget(flag, "is an HTTP URL, not an hb-grader gRPC target");
  }
  if (IsGrpcScheme(scheme)) {
    if (flag.size() == colon + 1 || absl::EndsWith(flag, "/")) {
      return NotATarget(flag, "names no address after its scheme");
    }
    return GraderTarget{GraderTarget::Kind::kRemote, flag};
  }
  if (absl::StrContains(flag, "://")) {
    return NotATarget(flag, absl::StrCat("has scheme '", scheme, "', which gRPC does not resolve"));
  }
  if (!IsHostPort(flag)) return NotATarget(flag, "is not a gRPC target (no scheme, no HOST:PORT)");
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
