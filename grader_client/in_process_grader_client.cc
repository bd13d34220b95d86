#include "grader_client/in_process_grader_client.h"

#include <utility>
#include <vector>

#include "grader/grader_proto.h"

namespace hb {

using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;

InProcessGraderClient::InProcessGraderClient(Grader& grader, Clock& clock,
                                             healthbench::grader::v1::GraderInfo info)
    : grader_(grader), clock_(clock), info_(std::move(info)) {}

absl::StatusOr<healthbench::grader::v1::GraderInfo> InProcessGraderClient::GetInfo(absl::Duration) {
  return info_;
}

InProcessGraderClient::~InProcessGraderClient() {
  CancelAll();
  absl::MutexLock lock(&state_->mu);
  while (!state_->tokens.empty()) state_->idle_cv.Wait(&state_->mu);
}

void InProcessGraderClient::GradeItem(const GradeItemRequest& request, absl::Duration timeout,
                                      Callback done) {
  auto token = std::make_shared<CancellationToken>();
  {
    absl::MutexLock lock(&state_->mu);
    state_->tokens.insert(token);
  }
  grader_.GradeItem(GradeItemInputFromProto(request), clock_.Now() + timeout, token,
                    [state = state_, token, request_id = request.request_id(),
                     done = std::move(done)](absl::StatusOr<ItemVerdict> verdict) {
                      if (verdict.ok()) {
                        GradeItemResponse response;
                        GradeItemResponseToProto(*verdict, request_id, &response);
                        done(std::move(response));
                      } else {
                        done(verdict.status());
                      }
                      absl::MutexLock lock(&state->mu);
                      state->tokens.erase(token);
                      if (state->tokens.empty()) state->idle_cv.SignalAll();
                    });
}

void InProcessGraderClient::CancelAll() {
  std::vector<std::shared_ptr<CancellationToken>> tokens;
  {
    absl::MutexLock lock(&state_->mu);
    tokens.assign(state_->tokens.begin(), state_->tokens.end());
  }
  // Outside the lock: a cancelled call may complete inline and erase its token.
  for (const auto& token : tokens) token->Cancel();
}

}  // namespace hb
