#include "orchestrator/run/row_feed.h"

#include <utility>

namespace hb {

void RowFeed::Add(std::vector<PlannedRow> rows) {
  if (rows.empty()) return;
  absl::MutexLock lock(&mu_);  // keeps the rows in order across callers
  if (!probe_fed_) {
    probe_fed_ = true;
    probe_->AddRows({rows.front()});
    probe_->CloseInput();
    rows.erase(rows.begin());
  }
  rest_->AddRows(std::move(rows));
}

void RowFeed::Close() {
  absl::MutexLock lock(&mu_);
  probe_->CloseInput();
  rest_->CloseInput();
}

std::vector<PlannedRow> ArrivingResponses::Add(const std::string* checkpoint, Response response) {
  const Example* example = dataset_.Find(response.prompt_id);
  if (example == nullptr) return {};
  const Response* kept;
  {
    absl::MutexLock lock(&mu_);
    responses_.push_back(std::move(response));
    kept = &responses_.back();
  }
  return PlanRows({example},
                  {CheckpointRows{checkpoint, [kept](const std::string&) { return kept; }}}, done_);
}

}  // namespace hb
