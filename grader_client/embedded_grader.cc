#include "grader_client/embedded_grader.h"

#include <utility>

#include "common/base/clock.h"
#include "common/base/status_macros.h"

namespace hb {

absl::StatusOr<std::unique_ptr<EmbeddedGrader>> EmbeddedGrader::Start(
    const GraderStackOptions& options) {
  std::unique_ptr<EmbeddedGrader> embedded(new EmbeddedGrader());
  HB_ASSIGN_OR_RETURN(embedded->stack_, GraderStack::Start(options));
  embedded->client_ = std::make_unique<InProcessGraderClient>(
      embedded->stack_->grader(), Clock::Real(), embedded->stack_->info());
  return embedded;
}

EmbeddedGrader::~EmbeddedGrader() {
  // Cancelling a Grader call completes it inline, so the client's destructor (cancel, then wait
  // for callbacks) returns promptly; only then may the stack go.
  client_.reset();
  stack_.reset();
}

}  // namespace hb
