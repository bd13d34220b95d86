// FakeGraderClient: the GraderClient double of the run pipeline, whose calls a test answers
// (inline through a responder, or later by hand). Thread-safe.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grader_client/grader_client.h"

namespace hb::testing {

using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;
using healthbench::grader::v1::GraderInfo;

// A GraderClient that records every call. With a responder set, each call is answered inline
// (before GradeItem returns) with the responder's result; otherwise calls stay pending until
// the test completes them with CompleteAll / CompleteOldest.
class FakeGraderClient final : public GraderClient {
 public:
  using Responder = std::function<absl::StatusOr<GradeItemResponse>(const GradeItemRequest&)>;

  void set_responder(Responder responder) {
    absl::MutexLock lock(&mu_);
    responder_ = std::move(responder);
  }

  void GradeItem(const GradeItemRequest& request, absl::Duration timeout, Callback done) override {
    Responder responder;
    {
      absl::MutexLock lock(&mu_);
      requests_.push_back(request);
      timeouts_.push_back(timeout);
      ++outstanding_;
      max_outstanding_ = std::max(max_outstanding_, outstanding_);
      responder = responder_;
      if (!responder) {
        pending_.push_back({request, std::move(done)});
        pending_cv_.SignalAll();
        return;
      }
    }
    absl::StatusOr<GradeItemResponse> result = responder(request);
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
    }
    done(std::move(result));
  }

  // What GetInfo answers (set_info); by default the reference settings (SPEC §5), no template.
  void set_info(absl::StatusOr<GraderInfo> info) {
    absl::MutexLock lock(&mu_);
    info_ = std::move(info);
  }
  absl::StatusOr<GraderInfo> GetInfo(absl::Duration) override {
    absl::MutexLock lock(&mu_);
    ++get_info_calls_;
    return info_;
  }
  int get_info_calls() const {
    absl::MutexLock lock(&mu_);
    return get_info_calls_;
  }

  void CancelAll() override {
    std::deque<std::pair<GradeItemRequest, Callback>> pending;
    {
      absl::MutexLock lock(&mu_);
      ++cancel_all_calls_;
      pending.swap(pending_);
      outstanding_ -= static_cast<int>(pending.size());
    }
    for (auto& [request, done] : pending) done(absl::CancelledError("cancelled by CancelAll"));
  }

  // Waits (real time, up to `timeout`) until at least `n` calls are pending.
  bool WaitForPending(int n, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    const absl::Time deadline = absl::Now() + timeout;
    while (static_cast<int>(pending_.size()) < n) {
      if (pending_cv_.WaitWithDeadline(&mu_, deadline)) {
        return static_cast<int>(pending_.size()) >= n;
      }
    }
    return true;
  }

  // Answers the pending calls (newest first when `reverse`) with `result_for(request)`.
  int CompleteAll(
      const std::function<absl::StatusOr<GradeItemResponse>(const GradeItemRequest&)>& result_for,
      bool reverse = false) {
    std::deque<std::pair<GradeItemRequest, Callback>> pending;
    {
      absl::MutexLock lock(&mu_);
      pending.swap(pending_);
      outstanding_ -= static_cast<int>(pending.size());
    }
    if (reverse) std::reverse(pending.begin(), pending.end());
    for (auto& [request, done] : pending) done(result_for(request));
    return static_cast<int>(pending.size());
  }

  int pending() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(pending_.size());
  }
  int max_outstanding() const {
    absl::MutexLock lock(&mu_);
    return max_outstanding_;
  }
  int cancel_all_calls() const {
    absl::MutexLock lock(&mu_);
    return cancel_all_calls_;
  }
  std::vector<GradeItemRequest> requests() const {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  std::vector<absl::Duration> timeouts() const {
    absl::MutexLock lock(&mu_);
    return timeouts_;
  }

 private:
  mutable absl::Mutex mu_;
  Responder responder_ ABSL_GUARDED_BY(mu_);
  absl::StatusOr<GraderInfo> info_ ABSL_GUARDED_BY(mu_) = [] {
    GraderInfo info;
    info.set_model("gpt-4.1-2025-04-14");
    info.set_temperature(0.5);
    info.set_max_tokens(2048);
    info.set_system_message("You are a helpful assistant.");
    return info;
  }();
  int get_info_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::pair<GradeItemRequest, Callback>> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<GradeItemRequest> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> timeouts_ ABSL_GUARDED_BY(mu_);
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int max_outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int cancel_all_calls_ ABSL_GUARDED_BY(mu_) = 0;
  absl::CondVar pending_cv_;
};

}  // namespace hb::testing
