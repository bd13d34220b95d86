#include "common/rpc/concurrency_limit.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/retry/retry_status.h"

namespace hb {

ConcurrencyLimit::Permit& ConcurrencyLimit::Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    Release();
    limit_ = std::exchange(other.limit_, nullptr);
    units_ = other.units_;
  }
  return *this;
}

void ConcurrencyLimit::Permit::Release() {
  if (limit_ == nullptr) return;
  absl::MutexLock lock(&limit_->mu_);
  limit_->in_progress_ -= units_;
  limit_ = nullptr;
}

absl::StatusOr<ConcurrencyLimit::Permit> ConcurrencyLimit::TryAcquire(int64_t units) {
  absl::MutexLock lock(&mu_);
  if (max_ > 0 && in_progress_ + units > max_) {
    absl::Status busy = absl::ResourceExhaustedError(absl::StrCat(
        "server busy: ", in_progress_, " ", what_, " and ", units, " more asked; the limit is ",
        max_, "; retry after ", absl::FormatDuration(retry_delay_)));
    SetRetryDelay(busy, retry_delay_);
    MarkServerBusy(busy);
    return busy;
  }
  in_progress_ += units;
  return Permit(this, units);
}

int64_t ConcurrencyLimit::in_progress() const {
  absl::MutexLock lock(&mu_);
  return in_progress_;
}

}  // namespace hb
