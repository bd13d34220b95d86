// EnvServiceImpl: the healthbench.env.v1.Environment gRPC service (callback API) over an
// hb::env::Environment: protos <-> domain types, absl -> gRPC statuses
// (common/rpc/grpc_status.h), the call's deadline passed to Submit. Handlers never block:
// Submit's reactor is finished from the environment's completion callback.
#pragma once

#include <memory>

#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/rate_limited_log.h"
#include "common/rpc/concurrency_limit.h"
#include "environment/env_proto.h"
#include "environment/environment.h"
#include "grpcpp/support/message_allocator.h"
#include "healthbench/env/v1/env.grpc.pb.h"
#include "security/bearer_tokens.h"

namespace hb::env {

namespace env_v1 = ::healthbench::env::v1;

// Proto -> domain (exposed for tests and other transports); SubmitResult's conversions are in
// environment/env_proto.h, included here.
TaskRef TaskRefFromProto(const env_v1::TaskRef& ref);

// Bounds on what one server takes on (issue #12: bounded work per request).
struct EnvServiceOptions {
  // RPCs in progress at once (`--max-concurrent-rpcs`); past it RESOURCE_EXHAUSTED with
  // `busy_retry_delay` as its google.rpc.RetryInfo, marked server-busy
  // (common/retry/retry_status.h). 0: no limit.
  int64_t max_concurrent_rpcs = 0;
  absl::Duration busy_retry_delay = absl::Seconds(1);
  // The deadline of a Submit/SubmitBatch whose client set none (`--default-deadline`).
  absl::Duration default_deadline = absl::Minutes(10);
  // request_id, task_id and split longer than this are INVALID_ARGUMENT (never echoed).
  size_t max_field_bytes = 1024;
  // Log lines of refused requests, per method and code.
  RateLimitedLogOptions refused_log;
};

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
  // Past options.max_concurrent_rpcs every RPC is RESOURCE_EXHAUSTED; a request_id, task_id or
  // split over options.max_field_bytes is INVALID_ARGUMENT. `clock` must outlive the service.
  EnvServiceImpl(Environment& env, const BearerTokens& tokens, EnvServiceOptions options = {},
                 Clock& clock = Clock::Real());

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

  // The rate-limited log of refused requests (options.refused_log), shared with the server's
  // malformed-request interceptor (common/rpc/malformed_request.h).
  const std::shared_ptr<RateLimitedLog>& refused_log() const { return refused_log_; }

 private:
  // Authenticates the caller and admits the RPC (the permit is held until it finishes).
  absl::StatusOr<std::shared_ptr<ConcurrencyLimit::Permit>> Admit(
      const grpc::CallbackServerContext& context);
  // Checks a submission's short fields against max_field_bytes.
  absl::Status CheckSubmission(const env_v1::SubmitRequest& request) const;
  // Finishes a refused RPC with `status`, with a rate-limited log line.
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context, const char* method,
                                   const absl::Status& status);
  absl::Time DeadlineOf(const grpc::CallbackServerContext& context) const;

  Environment& env_;
  const BearerTokens& tokens_;
  const EnvServiceOptions options_;
  Clock& clock_;
  ConcurrencyLimit rpcs_;
  std::shared_ptr<RateLimitedLog> refused_log_;
  SubmitArenaAllocator submit_allocator_;
};

}  // namespace hb::env
