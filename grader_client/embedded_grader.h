// EmbeddedGrader: hb-grader's grading stack (grader/grader_stack.h) built in-process from the
// same GraderStackOptions, with an InProcessGraderClient on top and no gRPC server: what
// `--grader embedded` runs in hb-env and `hb-orchestrator run`.
//
//   HB_ASSIGN_OR_RETURN(auto embedded, EmbeddedGrader::Start(options));
//   Dispatch through embedded->client().
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/base/scheduler.h"
#include "grader/grader.h"
#include "grader/grader_metrics.h"
#include "grader/grader_stack.h"
#include "grader/grader_stack_options.h"
#include "grader_client/in_process_grader_client.h"

namespace hb {

class EmbeddedGrader {
 public:
  // GraderStack::Start(options) and a client on it; errors are GraderStack::Start's.
  static absl::StatusOr<std::unique_ptr<EmbeddedGrader>> Start(const GraderStackOptions& options);

  // Cancels calls in progress (their callbacks run with kCancelled) and stops the HTTP loop.
  ~EmbeddedGrader();

  // Thread-safe; valid for the EmbeddedGrader's lifetime.
  GraderClient& client() { return *client_; }
  hb::Grader& grader() { return stack_->grader(); }
  // The HTTP loop's timers (for other pacing work in the same process).
  Scheduler& scheduler() { return stack_->scheduler(); }
  GraderMetrics& metrics() { return stack_->metrics(); }
  // The URL the grader calls, credentials redacted (RedactUrl), for logs.
  std::string upstream_url() const { return stack_->upstream_url(); }
  // What this grader grades with (MakeGraderInfo of its options); also its client's GetInfo.
  const healthbench::grader::v1::GraderInfo& info() const { return stack_->info(); }

 private:
  EmbeddedGrader() = default;

  std::unique_ptr<GraderStack> stack_;
  std::unique_ptr<InProcessGraderClient> client_;
};

}  // namespace hb
