// FakeRunMetrics: a RunMetrics (orchestrator/report/run_metrics.h) that counts what it is told,
// for tests of the dispatcher and the commands. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "orchestrator/report/run_metrics.h"

namespace hb::testing {

class FakeRunMetrics final : public RunMetrics {
 public:
  void RowsPlanned(int64_t rows) override {
    absl::MutexLock lock(&mu_);
    planned_ += rows;
  }
  void RowRecorded(absl::StatusCode code, bool from_cache) override {
    absl::MutexLock lock(&mu_);
    ++recorded_[absl::StatusCodeToString(code)];
    if (from_cache) ++from_cache_;
  }
  void RowRetried(absl::StatusCode code) override {
    absl::MutexLock lock(&mu_);
    ++retried_[absl::StatusCodeToString(code)];
  }
  void RateLimited() override {
    absl::MutexLock lock(&mu_);
    ++rate_limited_;
  }
  void TokensSpent(int64_t prompt, int64_t cached, int64_t completion) override {
    absl::MutexLock lock(&mu_);
    prompt_ += prompt;
    cached_ += cached;
    completion_ += completion;
  }
  void Progress(const ProgressSnapshot& snapshot) override {
    absl::MutexLock lock(&mu_);
    last_ = snapshot;
    ++progress_reports_;
  }

  int64_t planned() const {
    absl::MutexLock lock(&mu_);
    return planned_;
  }
  // Rows recorded / retried by code name ("OK" for graded rows).
  std::map<std::string, int64_t> recorded() const {
    absl::MutexLock lock(&mu_);
    return recorded_;
  }
  std::map<std::string, int64_t> retried() const {
    absl::MutexLock lock(&mu_);
    return retried_;
  }
  int64_t rate_limited() const {
    absl::MutexLock lock(&mu_);
    return rate_limited_;
  }
  int64_t prompt_tokens() const {
    absl::MutexLock lock(&mu_);
    return prompt_;
  }
  int64_t progress_reports() const {
    absl::MutexLock lock(&mu_);
    return progress_reports_;
  }
  ProgressSnapshot last_progress() const {
    absl::MutexLock lock(&mu_);
    return last_;
  }

 private:
  mutable absl::Mutex mu_;
  int64_t planned_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> recorded_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> retried_ ABSL_GUARDED_BY(mu_);
  int64_t from_cache_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rate_limited_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t prompt_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cached_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completion_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t progress_reports_ ABSL_GUARDED_BY(mu_) = 0;
  ProgressSnapshot last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::testing
