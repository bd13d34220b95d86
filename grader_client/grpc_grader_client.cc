#include "grader_client/grpc_grader_client.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/base/host_port.h"
#include "common/base/logging.h"
#include "common/base/tsan_annotations.h"
#include "common/rpc/grpc_status.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace hb {
namespace {

using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;

const char* ConnectivityName(grpc_connectivity_state state) {
  switch (state) {
    case GRPC_CHANNEL_IDLE:
      return "IDLE";
    case GRPC_CHANNEL_CONNECTING:
      return "CONNECTING";
    case GRPC_CHANNEL_READY:
      return "READY";
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return "TRANSIENT_FAILURE";
    case GRPC_CHANNEL_SHUTDOWN:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

// "host:port" (host may be "[v6]"); kInvalidArgument naming the grader target without a port.
absl::StatusOr<HostPort> SplitHostPort(absl::string_view address) {
  HostPortRules rules;
  rules.name = "grader target";
  return ParseHostPort(address, rules);
}

// The addresses `host` resolves to now, as "ipv4:a:port" / "ipv6:[a]:port", deduplicated.
absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve grader host '", host, "': ", gai_strerror(rc)));
  }
  std::vector<std::string> out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) !=
        0) {
      continue;
    }
    std::string replica = a->ai_family == AF_INET6 ? absl::StrCat("ipv6:[", text, "]:", port)
                                                   : absl::StrCat("ipv4:", text, ":", port);
    if (std::find(out.begin(), out.end(), replica) == out.end()) out.push_back(replica);
  }
  freeaddrinfo(found);
  return out;
}

// TSan only (common/base/tsan_annotations.h): everything GradeItem did before starting a call,
// the Call and the reaction's captures included, happens before that call's reaction.
char g_call_started;

}  // namespace

struct GrpcGraderClient::Call {
  grpc::ClientContext context;
  GradeItemRequest request;
  GradeItemResponse response;
  Callback done;
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateGraderChannel(
    const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials,
    const std::string& authority) {
  if (target.empty()) return absl::InvalidArgumentError("grader target is empty");
  grpc::ChannelArguments args;
  if (!authority.empty()) {
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, authority);
    absl::StatusOr<HostPort> host_port = SplitHostPort(authority);
    if (host_port.ok()) args.SetSslTargetNameOverride(host_port->host);
  }
  args.SetServiceConfigJSON(kGraderServiceConfig);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 1);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  // Pings only while calls are active: servers answer idle pings with GOAWAY by default.
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  // Pods come and go behind a headless Service: re-resolve at least every 10 s when asked.
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 10000);
  // Requests carry whole conversations.
  args.SetMaxSendMessageSize(64 * 1024 * 1024);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  if (credentials == nullptr) credentials = grpc::InsecureChannelCredentials();
  return grpc::CreateCustomChannel(target, credentials, args);
}

absl::StatusOr<std::unique_ptr<GrpcGraderClient>> GrpcGraderClient::Create(
    const std::string& target, const ClientSecurityOptions& security) {
  absl::StatusOr<ClientCredentials> credentials = MakeClientCredentials(security);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      CreateGraderChannel(target, credentials->channel);
  if (!channel.ok()) return channel.status();
  return std::make_unique<GrpcGraderClient>(*std::move(channel), credentials->token);
}

GrpcGraderClient::GrpcGraderClient(std::shared_ptr<grpc::Channel> channel, std::string token)
    : channel_(std::move(channel)),
      token_(std::move(token)),
      stub_(healthbench::grader::v1::Grader::NewStub(channel_)),
      state_(std::make_shared<State>()) {}

GrpcGraderClient::~GrpcGraderClient() {
  CancelAll();
  absl::MutexLock lock(&state_->mu);
  while (state_->outstanding > 0) state_->idle_cv.Wait(&state_->mu);
}

void GrpcGraderClient::GradeItem(const GradeItemRequest& request, absl::Duration timeout,
                                 Callback done) {
  auto* call = new Call;
  call->request = request;
  call->done = std::move(done);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             absl::ToChronoMilliseconds(timeout));
  call->context.set_wait_for_ready(true);
  AttachCallerToken(call->context, token_);
  {
    absl::MutexLock lock(&state_->mu);
    state_->calls.insert(call);
    ++state_->outstanding;
  }
  // The reaction holds the shared state, never `this`: the client may be destroyed as soon as
  // the last call left the set.
  std::shared_ptr<State> state = state_;
  std::function<void(grpc::Status)> reaction = [state, call](grpc::Status status) {
    // gRPC runs the reaction after the call started (through core's queues, which TSan does
    // not see): say so before reading the captures.
    TsanAcquire(&g_call_started);
    if (status.ok()) {
      call->done(std::move(call->response));
    } else {
      call->done(FromGrpcStatus(status));
    }
    // The ClientContext holds a reference to the channel. Destroy it before the destructor may
    // go on and drop the client's own reference: the last one must never be released on a gRPC
    // callback thread (grpc/grpc#32584: SIGSEGV in the callback-alternative CQ).
    {
      absl::MutexLock lock(&state->mu);
      state->calls.erase(call);  // CancelAll no longer sees it
    }
    delete call;
    absl::MutexLock lock(&state->mu);
    if (--state->outstanding == 0) state->idle_cv.SignalAll();
  };
  TsanRelease(&g_call_started);
  stub_->async()->GradeItem(&call->context, &call->request, &call->response, std::move(reaction));
}

void GrpcGraderClient::CancelAll() {
  absl::MutexLock lock(&state_->mu);
  for (Call* call : state_->calls) call->context.TryCancel();
}

namespace {

absl::StatusOr<healthbench::grader::v1::GraderInfo> CallGetInfo(
    healthbench::grader::v1::Grader::Stub& stub, const std::string& token, absl::Duration timeout,
    bool wait_for_ready) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  context.set_wait_for_ready(wait_for_ready);
  AttachCallerToken(context, token);
  healthbench::grader::v1::GraderInfo info;
  grpc::Status status = stub.GetInfo(&context, healthbench::grader::v1::GetInfoRequest(), &info);
  if (!status.ok()) return FromGrpcStatus(status);
  return info;
}

}  // namespace

absl::StatusOr<healthbench::grader::v1::GraderInfo> GrpcGraderClient::GetInfo(
    absl::Duration timeout) {
  return CallGetInfo(*stub_, token_, timeout, /*wait_for_ready=*/true);
}

absl::StatusOr<std::vector<ReplicaTarget>> ReplicaTargets(const std::string& target) {
  if (target.empty()) return absl::InvalidArgumentError("grader target is empty");
  absl::string_view rest = target;
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (!absl::ConsumePrefix(&rest, scheme)) continue;
    std::vector<ReplicaTarget> out;
    for (absl::string_view address : absl::StrSplit(rest, ',', absl::SkipEmpty())) {
      out.push_back({absl::StrCat(scheme, address), ""});
    }
    return out;
  }
  if (absl::ConsumePrefix(&rest, "dns:")) {
    // "dns:///name:port" or "dns://resolver/name:port": the name follows the third slash.
    if (absl::ConsumePrefix(&rest, "//"))
      rest = rest.substr(std::min(rest.size(), rest.find('/') + 1));
  } else if (absl::StrContains(target, ":/") || absl::StartsWith(target, "unix")) {
    // Another scheme ("unix:/path", "xds:///..."): gRPC resolves it; ask it as one replica.
    return std::vector<ReplicaTarget>{{target, ""}};
  }
  absl::StatusOr<HostPort> host_port = SplitHostPort(rest);
  if (!host_port.ok()) return host_port.status();
  absl::StatusOr<std::vector<std::string>> addresses =
      Resolve(host_port->host, std::to_string(host_port->port));
  if (!addresses.ok()) return addresses.status();
  std::vector<ReplicaTarget> out;
  for (std::string& address : *addresses) out.push_back({std::move(address), std::string(rest)});
  return out;
}

absl::StatusOr<std::vector<ReplicaInfo>> GetInfoFromEveryReplica(
    const std::string& target, const ClientSecurityOptions& security, absl::Duration timeout,
    std::vector<std::string>* unreachable) {
  absl::StatusOr<ClientCredentials> credentials = MakeClientCredentials(security);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::vector<ReplicaTarget>> replicas = ReplicaTargets(target);
  if (!replicas.ok()) return replicas.status();
  std::vector<ReplicaInfo> out;
  std::string last_error;
  for (const ReplicaTarget& replica : *replicas) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        CreateGraderChannel(replica.target, credentials->channel, replica.authority);
    if (!channel.ok()) return channel.status();
    auto stub = healthbench::grader::v1::Grader::NewStub(*channel);
    // Not wait_for_ready: a replica that refuses connections now is reported at once.
    absl::StatusOr<healthbench::grader::v1::GraderInfo> info =
        CallGetInfo(*stub, credentials->token, timeout, /*wait_for_ready=*/false);
    const absl::StatusCode code = info.status().code();
    if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
      last_error = absl::StrCat(replica.target, ": ", info.status().message());
      if (unreachable != nullptr) unreachable->push_back(last_error);
      continue;
    }
    if (code == absl::StatusCode::kUnimplemented) {
      return absl::FailedPreconditionError(absl::StrCat(
          "grader replica ", replica.target,
          " does not implement GetInfo (an hb-grader older "
          "than this client), so its settings cannot be checked or recorded: upgrade it"));
    }
    if (!info.ok()) {
      return absl::Status(code, absl::StrCat("GetInfo from grader replica ", replica.target, ": ",
                                             info.status().message()));
    }
    out.push_back(ReplicaInfo{replica.target, *std::move(info)});
  }
  if (out.empty()) {
    return absl::UnavailableError(absl::StrCat("no hb-grader replica behind ", target,
                                               " answered GetInfo (", last_error, ")"));
  }
  return out;
}

absl::StatusOr<std::vector<ReplicaInfo>> AgreedReplicaInfos(const std::string& target,
                                                            const ClientSecurityOptions& security,
                                                            absl::Duration timeout) {
  std::vector<std::string> unreachable;
  absl::StatusOr<std::vector<ReplicaInfo>> replicas =
      GetInfoFromEveryReplica(target, security, timeout, &unreachable);
  if (!replicas.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot check the graders' settings: ", replicas.status().message()));
  }
  for (const std::string& replica : unreachable) {
    HB_LOG_WARN("grader replica unreachable at start, its settings are unchecked: {}", replica);
  }
  std::vector<std::string> warnings;
  if (absl::Status agree = CheckGradersAgree(*replicas, &warnings); !agree.ok()) return agree;
  for (const std::string& warning : warnings) HB_LOG_WARN("{}", warning);
  const healthbench::grader::v1::GraderInfo& info = replicas->front().info;
  HB_LOG_INFO(
      "graders: {} replica(s) grade with model {}, temperature {}, max_tokens {}, template "
      "sha256 {}, upstream {}, hb-grader {} (recorded as provenance; this process's own --llm-* "
      "flags do not grade)",
      replicas->size(), info.model(), info.temperature(), info.max_tokens(), info.template_sha256(),
      info.upstream_base_url(), info.version());
  return replicas;
}

absl::Status GrpcGraderClient::WaitForReady(absl::Duration timeout) {
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
  if (channel_->WaitForConnected(deadline)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("no grader replica became ready within ",
                                             absl::FormatDuration(timeout), " (channel state ",
                                             ConnectivityName(channel_->GetState(false)), ")"));
}

}  // namespace hb
