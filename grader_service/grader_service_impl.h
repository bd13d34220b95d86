// GraderServiceImpl: the healthbench.grader.v1.Grader gRPC service (callback API) over a
// Grader. Translates protos to domain types and statuses to grpc::Status, takes the deadline
// from the ServerContext, and cancels the upstream work when the RPC is cancelled. Handlers
// never block: every reactor is finished from the Grader's completion callback.
#pragma once

#include <string>

#include "common/base/clock.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"
#include "security/bearer_tokens.h"

namespace hb {

namespace grader_v1 = ::healthbench::grader::v1;

// Proto <-> domain conversions (exposed for tests and for the orchestrator's embedded mode).
GradeItemInput GradeItemInputFromProto(const grader_v1::GradeItemRequest& request);
void ItemVerdictToProto(const ItemVerdict& verdict, grader_v1::GradeItemResponse* response);
// The GradeItem reply for `verdict`: ItemVerdictToProto plus the request's id. The gRPC service
// and the in-process client (grader_client/in_process_grader_client.h) both answer with it.
void GradeItemResponseToProto(const ItemVerdict& verdict, const std::string& request_id,
                              grader_v1::GradeItemResponse* response);
RubricItem RubricItemFromProto(const grader_v1::RubricItem& item);

class GraderServiceImpl final : public grader_v1::Grader::CallbackService {
 public:
  // `grader`, `clock`, `metrics` (optional) and `tokens` (optional) are not owned and must
  // outlive the service. With tokens, every RPC first checks the caller's bearer token and
  // fails with UNAUTHENTICATED (security/transport_security.h).
  GraderServiceImpl(hb::Grader& grader, Clock& clock, GraderMetrics* metrics,
                    const BearerTokens* tokens = nullptr);

  // One verdict. Errors as hb::Grader::GradeItem.
  grpc::ServerUnaryReactor* GradeItem(grpc::CallbackServerContext* context,
                                      const grader_v1::GradeItemRequest* request,
                                      grader_v1::GradeItemResponse* response) override;

  // Every rubric item graded concurrently; all verdicts in request order, the task score and
  // the rubric-tag scores (hb::ScoreTask). If any item fails, the others are cancelled and the
  // RPC fails with the first failure ("rubric item N: ..."); no partial result is returned.
  // kInvalidArgument for no items, more than max_rubric_items, or no positive points.
  grpc::ServerUnaryReactor* GradeReply(grpc::CallbackServerContext* context,
                                       const grader_v1::GradeReplyRequest* request,
                                       grader_v1::GradeReplyResponse* response) override;

 private:
  hb::Grader& grader_;
  Clock& clock_;
  GraderMetrics* const metrics_;
  const BearerTokens* const tokens_;
};

}  // namespace hb
