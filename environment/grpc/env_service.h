// EnvServiceImpl: the healthbench.env.v1.Environment gRPC service (callback API) over an
// hb::env::Environment: protos <-> domain types, absl -> gRPC statuses
// (common/rpc/grpc_status.h), the call's deadline passed to Submit. Handlers never block:
// Submit's reactor is finished from the environment's completion callback.
#pragma once

#include "environment/environment.h"
#include "grpcpp/support/message_allocator.h"
#include "healthbench/env/v1/env.grpc.pb.h"
#include "security/bearer_tokens.h"

namespace hb::env {

namespace env_v1 = ::healthbench::env::v1;

// Domain -> proto (exposed for tests and other transports).
TaskRef TaskRefFromProto(const env_v1::TaskRef& ref);
void SubmitResultToProto(const SubmitResult& result, env_v1::SubmitResponse* out);
// The inverse of SubmitResultToProto (request_id is dropped); the result cache's SQLite file
// stores results in this form.
SubmitResult SubmitResultFromProto(const env_v1::SubmitResponse& proto);

// Allocates the request and response of one Submit on a protobuf arena whose first block is
// part of the holder: one allocation per call for both messages and their sub-messages (a
// response holds a message per rubric item), and no per-message destruction. Thread-safe.
class SubmitArenaAllocator final
    : public grpc::MessageAllocator<env_v1::SubmitRequest, env_v1::SubmitResponse> {
 public:
  grpc::MessageHolder<env_v1::SubmitRequest, env_v1::SubmitResponse>* AllocateMessages() override;
};

class EnvServiceImpl final : public env_v1::Environment::CallbackService {
 public:
  // `env` and `tokens` are not owned and must outlive the service. Every RPC first checks the
  // caller's bearer token against `tokens` (none: open) and fails with UNAUTHENTICATED.
  EnvServiceImpl(Environment& env, const BearerTokens& tokens) : env_(env), tokens_(tokens) {
    SetMessageAllocatorFor_Submit(&submit_allocator_);
  }

  grpc::ServerUnaryReactor* ListSplits(grpc::CallbackServerContext* context,
                                       const env_v1::ListSplitsRequest* request,
                                       env_v1::ListSplitsResponse* response) override;
  // stop = 0 means the end of the split. Errors as Environment::ListTasks.
  grpc::ServerUnaryReactor* ListTasks(grpc::CallbackServerContext* context,
                                      const env_v1::ListTasksRequest* request,
                                      env_v1::ListTasksResponse* response) override;
  grpc::ServerUnaryReactor* GetTask(grpc::CallbackServerContext* context,
                                    const env_v1::GetTaskRequest* request,
                                    env_v1::GetTaskResponse* response) override;
  // Errors as Environment::Submit.
  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* context,
                                   const env_v1::SubmitRequest* request,
                                   env_v1::SubmitResponse* response) override;
  // Every submission concurrently; always OK, with one response or error per submission.
  grpc::ServerUnaryReactor* SubmitBatch(grpc::CallbackServerContext* context,
                                        const env_v1::SubmitBatchRequest* request,
                                        env_v1::SubmitBatchResponse* response) override;

 private:
  Environment& env_;
  const BearerTokens& tokens_;
  SubmitArenaAllocator submit_allocator_;
};

}  // namespace hb::env
