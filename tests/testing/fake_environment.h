// FakeEnvironment: an in-memory hb::env::Environment for transport tests. Tasks are added by
// the test; Submit grades nothing: it answers from a result function the test sets, on the
// fake's own worker thread (as the real environment answers on a grading thread), and a test
// can hold submissions to observe a call in progress, then release them.
//
//   FakeEnvironment env;
//   env.AddTask("dev", {"p1", {"theme:x"}, "user: hi"});
//   env.HoldSubmissions(true);  ... EXPECT_TRUE(env.WaitForSubmissions(1));
//   ... env.HoldSubmissions(false);
//
// Thread-safe. Errors follow the Environment contract (but a bare task id that several splits
// hold is the first split's task, not refused): kNotFound for an unknown task id or split,
// kOutOfRange for an index outside a split, kInvalidArgument for a reply over max_reply_bytes
// ("reply is N bytes, over the limit of M bytes"); an up-front rejection set with RejectUpFront()
// is returned inline.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "environment/environment.h"

namespace hb::testing {

struct FakeTask {
  std::string id;
  std::vector<std::string> tags;
  std::string prompt_text;
};

class FakeEnvironment final : public env::Environment {
 public:
  // Computes the graded result of `reply` for `task_id`. The default gives reward
  // len(reply) % 3 - 1 over two items (so an empty reply scores -1, a negative reward).
  using ResultFn =
      std::function<absl::StatusOr<env::SubmitResult>(const std::string&, const std::string&)>;

  FakeEnvironment();
  ~FakeEnvironment() override;

  // Appends a task to `split` (created on first use, in order of first use).
  void AddTask(const std::string& split, FakeTask task);
  void SetResultFn(ResultFn fn);
  void set_max_reply_bytes(size_t n);
  // While held, submissions queue up; releasing answers them all.
  void HoldSubmissions(bool hold);
  // Submit answers `status` inline (OK clears it).
  void RejectUpFront(absl::Status status);
  // Blocks until at least `n` submissions were accepted (not rejected up front): true then;
  // false after `timeout` (a guard against a hung test, never a synchronisation point).
  [[nodiscard]] bool WaitForSubmissions(int n, absl::Duration timeout = absl::Seconds(60));
  int submissions() const;
  // The deadline of the latest Submit.
  absl::Time last_deadline() const;
  // The replies accepted so far, in order.
  std::vector<std::string> replies() const;

  std::vector<env::SplitInfo> ListSplits() const override;
  absl::StatusOr<std::vector<env::TaskSummary>> ListTasks(absl::string_view split, int64_t start,
                                                          int64_t stop) const override;
  absl::StatusOr<env::TaskPrompt> GetTask(const env::TaskRef& ref) const override;
  void Submit(const env::TaskRef& ref, std::string reply, absl::Time deadline,
              SubmitCallback done) override;
  // Submit by task id, waited for: what a transport's answer for (task, reply) must match.
  // Counts as a submission. Not while submissions are held.
  absl::StatusOr<env::SubmitResult> SubmitAndWait(const std::string& task_id, std::string reply);

 private:
  struct Pending {
    std::string task_id;
    std::string split;
    std::string reply;
    SubmitCallback done;
  };
  struct Split {
    std::string name;
    std::vector<FakeTask> tasks;
  };

  absl::StatusOr<env::TaskPrompt> Find(const env::TaskRef& ref) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ReadyToWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Work();

  mutable absl::Mutex mu_;
  std::vector<Split> splits_ ABSL_GUARDED_BY(mu_);
  absl::Time last_deadline_ ABSL_GUARDED_BY(mu_);
  ResultFn result_fn_ ABSL_GUARDED_BY(mu_);
  size_t max_reply_bytes_ ABSL_GUARDED_BY(mu_) = 1 << 20;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status reject_ ABSL_GUARDED_BY(mu_);
  std::vector<Pending> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> replies_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace hb::testing
