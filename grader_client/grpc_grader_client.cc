#include "grader_client/grpc_grader_client.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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

}  // namespace

struct GrpcGraderClient::Call {
  grpc::ClientContext context;
  GradeItemRequest request;
  GradeItemResponse response;
  Callback done;
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateGraderChannel(
    const std::string& target, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  if (target.empty()) return absl::InvalidArgumentError("grader target is empty");
  grpc::ChannelArguments args;
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
  stub_->async()->GradeItem(&call->context, &call->request, &call->response,
                            [state, call](grpc::Status status) {
                              if (status.ok()) {
                                call->done(std::move(call->response));
                              } else {
                                call->done(FromGrpcStatus(status));
                              }
                              // The ClientContext holds a reference to the channel. Destroy
                              // it before the destructor may go on and drop the client's own
                              // reference: the last one must never be released on a gRPC
                              // callback thread (grpc/grpc#32584: SIGSEGV in the
                              // callback-alternative CQ).
                              {
                                absl::MutexLock lock(&state->mu);
                                state->calls.erase(call);  // CancelAll no longer sees it
                              }
                              delete call;
                              absl::MutexLock lock(&state->mu);
                              if (--state->outstanding == 0) state->idle_cv.SignalAll();
                            });
}

void GrpcGraderClient::CancelAll() {
  absl::MutexLock lock(&state_->mu);
  for (Call* call : state_->calls) call->context.TryCancel();
}

absl::Status GrpcGraderClient::WaitForReady(absl::Duration timeout) {
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout);
  if (channel_->WaitForConnected(deadline)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("no grader replica became ready within ",
                                             absl::FormatDuration(timeout), " (channel state ",
                                             ConnectivityName(channel_->GetState(false)), ")"));
}

}  // namespace hb
