#include "tests/testing/fake_environment.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace hb::testing {

namespace {

absl::StatusOr<env::SubmitResult> DefaultResult(const std::string& task_id,
                                                const std::string& reply) {
  env::SubmitResult result;
  result.task_id = task_id;
  result.points_possible = 2;
  result.points_met = static_cast<double>(reply.size() % 3) * 2 - 2;
  result.reward = result.points_met / result.points_possible;
  result.reward_clipped = std::clamp(result.reward, 0.0, 1.0);
  result.items = {{"Is kind", 2, reply.size() % 3 != 0, "fake verdict"},
                  {"Is rude", -2, reply.size() % 3 != 2, "fake verdict"}};
  return result;
}

}  // namespace

FakeEnvironment::FakeEnvironment() : result_fn_(DefaultResult), worker_([this] { Work(); }) {}

FakeEnvironment::~FakeEnvironment() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    hold_ = false;
  }
  worker_.join();
}

void FakeEnvironment::AddTask(const std::string& split, FakeTask task) {
  absl::MutexLock lock(&mu_);
  auto it =
      std::find_if(splits_.begin(), splits_.end(), [&](const Split& s) { return s.name == split; });
  if (it == splits_.end()) it = splits_.insert(splits_.end(), Split{split, {}});
  it->tasks.push_back(std::move(task));
}

void FakeEnvironment::SetResultFn(ResultFn fn) {
  absl::MutexLock lock(&mu_);
  result_fn_ = std::move(fn);
}

void FakeEnvironment::set_max_reply_bytes(size_t n) {
  absl::MutexLock lock(&mu_);
  max_reply_bytes_ = n;
}

void FakeEnvironment::HoldSubmissions(bool hold) {
  absl::MutexLock lock(&mu_);
  hold_ = hold;
}

void FakeEnvironment::RejectUpFront(absl::Status status) {
  absl::MutexLock lock(&mu_);
  reject_ = std::move(status);
}

bool FakeEnvironment::WaitForSubmissions(int n, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  struct Arg {
    const std::vector<std::string>* replies;
    size_t n;
  } arg{&replies_, static_cast<size_t>(n)};
  return mu_.AwaitWithTimeout(absl::Condition(
                                  +[](Arg* a) { return a->replies->size() >= a->n; }, &arg),
                              timeout);
}

absl::Time FakeEnvironment::last_deadline() const {
  absl::MutexLock lock(&mu_);
  return last_deadline_;
}

int FakeEnvironment::submissions() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(replies_.size());
}

std::vector<std::string> FakeEnvironment::replies() const {
  absl::MutexLock lock(&mu_);
  return replies_;
}

std::vector<env::SplitInfo> FakeEnvironment::ListSplits() const {
  absl::MutexLock lock(&mu_);
  std::vector<env::SplitInfo> out;
  for (const Split& split : splits_) {
    out.push_back({split.name, static_cast<int64_t>(split.tasks.size())});
  }
  return out;
}

absl::StatusOr<std::vector<env::TaskSummary>> FakeEnvironment::ListTasks(absl::string_view split,
                                                                         int64_t start,
                                                                         int64_t stop) const {
  absl::MutexLock lock(&mu_);
  auto it =
      std::find_if(splits_.begin(), splits_.end(), [&](const Split& s) { return s.name == split; });
  if (it == splits_.end()) return absl::NotFoundError(absl::StrCat("unknown split '", split, "'"));
  if (start < 0 || start > stop) {
    return absl::InvalidArgumentError(absl::StrCat("bad range [", start, ", ", stop, ")"));
  }
  std::vector<env::TaskSummary> out;
  const int64_t end = std::min<int64_t>(stop, static_cast<int64_t>(it->tasks.size()));
  for (int64_t i = start; i < end; ++i) {
    out.push_back({it->tasks[i].id, it->name, i, it->tasks[i].tags});
  }
  return out;
}

absl::StatusOr<env::TaskPrompt> FakeEnvironment::Find(const env::TaskRef& ref) const {
  if (ref.task_id.empty() != ref.index.has_value()) {
    return absl::InvalidArgumentError("set task_id (and maybe split) or (split, index)");
  }
  for (const Split& split : splits_) {
    for (size_t i = 0; i < split.tasks.size(); ++i) {
      const FakeTask& task = split.tasks[i];
      const bool match =
          ref.index.has_value()
              ? split.name == ref.split && static_cast<int64_t>(i) == *ref.index
              : task.id == ref.task_id && (ref.split.empty() || ref.split == split.name);
      if (match) {
        return env::TaskPrompt{{task.id, split.name, static_cast<int64_t>(i), task.tags},
                               {{"user", task.prompt_text}},
                               task.prompt_text};
      }
    }
    if (ref.index.has_value() && split.name == ref.split) {
      return absl::OutOfRangeError(
          absl::StrCat("index ", *ref.index, " is outside split '", split.name, "'"));
    }
  }
  if (ref.index.has_value()) {
    return absl::NotFoundError(absl::StrCat("unknown split '", ref.split, "'"));
  }
  return absl::NotFoundError(absl::StrCat("unknown task id '", ref.task_id, "'"));
}

absl::StatusOr<env::TaskPrompt> FakeEnvironment::GetTask(const env::TaskRef& ref) const {
  absl::MutexLock lock(&mu_);
  return Find(ref);
}

void FakeEnvironment::Submit(const env::TaskRef& ref, std::string reply, absl::Time deadline,
                             SubmitCallback done) {
  absl::Status rejected;
  std::string task_id;
  {
    absl::MutexLock lock(&mu_);
    last_deadline_ = deadline;
    absl::StatusOr<env::TaskPrompt> task = Find(ref);
    if (!reject_.ok()) {
      rejected = reject_;
    } else if (!task.ok()) {
      rejected = task.status();
    } else if (reply.size() > max_reply_bytes_) {
      rejected = absl::InvalidArgumentError(absl::StrCat(
          "reply is ", reply.size(), " bytes, over the limit of ", max_reply_bytes_, " bytes"));
    } else {
      replies_.push_back(reply);
      queue_.push_back({task->task.task_id, task->task.split, std::move(reply), std::move(done)});
      return;
    }
  }
  done(rejected);
}

bool FakeEnvironment::ReadyToWork() const { return stop_ || (!hold_ && !queue_.empty()); }

void FakeEnvironment::Work() {
  while (true) {
    std::vector<Pending> batch;
    ResultFn fn;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &FakeEnvironment::ReadyToWork));
      if (queue_.empty() && stop_) return;
      batch.swap(queue_);
      fn = result_fn_;
    }
    for (Pending& pending : batch) {
      absl::StatusOr<env::SubmitResult> result = fn(pending.task_id, pending.reply);
      if (result.ok() && result->split.empty()) result->split = pending.split;
      pending.done(std::move(result));
    }
  }
}

absl::StatusOr<env::SubmitResult> FakeEnvironment::SubmitAndWait(const std::string& task_id,
                                                                 std::string reply) {
  absl::Notification finished;
  absl::StatusOr<env::SubmitResult> out;
  Submit(env::TaskRef::ById(task_id), std::move(reply), absl::InfiniteFuture(),
         [&](absl::StatusOr<env::SubmitResult> result) {
           out = std::move(result);
           finished.Notify();
         });
  finished.WaitForNotification();
  return out;
}

}  // namespace hb::testing
