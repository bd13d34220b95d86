// GraderServiceImpl: the healthbench.grader.v1.Grader gRPC service (callback API) over a
// Grader. Translates protos to domain types and statuses to grpc::Status, takes the deadline
// from the ServerContext, and cancels the upstream work when the RPC is cancelled. Handlers
// never block: every reactor is finished from the Grader's completion callback.
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/rate_limited_log.h"
#include "common/base/scheduler.h"
#include "common/rpc/concurrency_limit.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "grader/grader_proto.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"
#include "security/bearer_tokens.h"

namespace hb {

namespace grader_service_internal {
class GraderReactor;
}

namespace grader_v1 = ::healthbench::grader::v1;

// Bounds on the work one server takes on (issue #12: bounded work per request).
struct GraderServiceOptions {
  // RPCs (GradeItem and GradeReply) in progress at once; past it an RPC is RESOURCE_EXHAUSTED
  // with `busy_retry_delay` as its google.rpc.RetryInfo, marked server-busy
  // (common/retry/retry_status.h: not the upstream's rate limit). 0: no limit.
  int64_t max_concurrent_rpcs = 0;
  // Rubric items admitted at once across RPCs (in flight upstream or waiting for an upstream
  // slot): the upstream queue is bounded, a request past it is refused as above. 0: no limit.
  int64_t max_items_in_progress = 0;
  absl::Duration busy_retry_delay = absl::Seconds(1);
  // The deadline of an RPC whose client set none; past it the RPC is DEADLINE_EXCEEDED.
  absl::Duration default_deadline = absl::Minutes(10);
  // Where GradeReply scores the verdicts and builds its response, so that work never runs on
  // the upstream client's event-loop thread. Not owned; must outlive the service and run what
  // is scheduled until then. Null: on the thread that delivers the last verdict.
  Scheduler* completions = nullptr;
  // Log lines of refused requests (INVALID_ARGUMENT, UNAUTHENTICATED, RESOURCE_EXHAUSTED
  // refusals) per method and code.
  RateLimitedLogOptions refused_log;
  // What GetInfo answers (EmbeddedGrader::info()).
  grader_v1::GraderInfo info;
};

class GraderServiceImpl final : public grader_v1::Grader::CallbackService {
 public:
  // `grader`, `clock`, `metrics` (optional) and `tokens` (optional) are not owned and must
  // outlive the service. With tokens, every RPC first checks the caller's bearer token and
  // fails with UNAUTHENTICATED (security/transport_security.h).
  GraderServiceImpl(hb::Grader& grader, Clock& clock, GraderMetrics* metrics,
                    const BearerTokens* tokens = nullptr, GraderServiceOptions options = {});

  // One verdict. Errors as hb::Grader::GradeItem; both RPCs also kResourceExhausted past
  // GraderServiceOptions' limits.
  grpc::ServerUnaryReactor* GradeItem(grpc::CallbackServerContext* context,
                                      const grader_v1::GradeItemRequest* request,
                                      grader_v1::GradeItemResponse* response) override;

  // Every rubric item graded concurrently; all verdicts in request order, the task score and
  // the rubric-tag scores (hb::ScoreTask). If any item fails, the others are cancelled and the
  // RPC fails with the first failure ("rubric item N: ..."); no partial result is returned.
  // kInvalidArgument for no items, more than max_rubric_items, no positive points, or any
  // field over a GraderLimits limit (checked for every item before any upstream call). The
  // conversation is rendered once and shared by the items (Grader::Prepare).
  grpc::ServerUnaryReactor* GradeReply(grpc::CallbackServerContext* context,
                                       const grader_v1::GradeReplyRequest* request,
                                       grader_v1::GradeReplyResponse* response) override;

  // options.info, after the same token check as the other methods (kUnauthenticated); no
  // upstream call, no admission limit.
  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const grader_v1::GetInfoRequest* request,
                                    grader_v1::GraderInfo* response) override;

  // The rate-limited log of refused requests (options.refused_log), shared with whatever else
  // refuses requests for this service (GraderServer's malformed-request interceptor).
  const std::shared_ptr<RateLimitedLog>& refused_log() const { return refused_log_; }

 private:
  // Authenticates the caller and admits the RPC and its `items` rubric items, the permits held
  // by `reactor`; kUnauthenticated or kResourceExhausted otherwise.
  absl::Status Admit(grpc::CallbackServerContext& context, size_t items,
                     grader_service_internal::GraderReactor& reactor);
  // Checks a GradeReply against the limits and renders its shared part once.
  absl::StatusOr<std::shared_ptr<const PreparedReply>> ValidateReply(
      const grader_v1::GradeReplyRequest& request, const std::vector<RubricItem>& items) const;

  hb::Grader& grader_;
  Clock& clock_;
  GraderMetrics* const metrics_;
  const BearerTokens* const tokens_;
  const GraderServiceOptions options_;
  ConcurrencyLimit rpcs_;
  ConcurrencyLimit items_;
  std::shared_ptr<RateLimitedLog> refused_log_;
};

}  // namespace hb
