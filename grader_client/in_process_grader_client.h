// InProcessGraderClient: GraderClient on a hb::Grader in the same process. No serialisation,
// no socket: the request proto is converted to the Grader's input and the verdict back to a
// GradeItemResponse with the same conversions the gRPC service uses
// (grader/grader_proto.h), so a caller sees exactly what hb-grader would send:
// the same verdict fields, the same rate-limit relay, the same error statuses (passed through
// unchanged, payloads included).
//
//   InProcessGraderClient client(grader, Clock::Real());
//   client.GradeItem(request, absl::Seconds(600), [](absl::StatusOr<GradeItemResponse> r) {...});
#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/base/cancellation.h"
#include "common/base/clock.h"
#include "grader/grader.h"
#include "grader_client/grader_client.h"

namespace hb {

class InProcessGraderClient final : public GraderClient {
 public:
  // `grader` and `clock` are not owned and must outlive the client. `info` is what GetInfo
  // answers (MakeGraderInfo of the grader's options).
  InProcessGraderClient(Grader& grader, Clock& clock,
                        healthbench::grader::v1::GraderInfo info = {});
  // Cancels outstanding calls and waits until their callbacks have returned.
  ~InProcessGraderClient() override;

  // Grades with deadline clock.Now() + `timeout`. `done` runs inline for a request the Grader
  // rejects up front (kInvalidArgument), otherwise on the Grader's LLM client or scheduler
  // thread. Errors exactly as Grader::GradeItem.
  void GradeItem(const healthbench::grader::v1::GradeItemRequest& request, absl::Duration timeout,
                 Callback done) override;
  // Cancels every call outstanding now (their callbacks get kCancelled unless a result won).
  void CancelAll() override;
  // The `info` given at construction; never fails.
  absl::StatusOr<healthbench::grader::v1::GraderInfo> GetInfo(absl::Duration timeout) override;

 private:
  struct State {
    absl::Mutex mu;
    absl::CondVar idle_cv;
    absl::flat_hash_set<std::shared_ptr<CancellationToken>> tokens ABSL_GUARDED_BY(mu);
  };
  Grader& grader_;
  Clock& clock_;
  const healthbench::grader::v1::GraderInfo info_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace hb
