#include "environment/healthbench_environment.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/json.h"
#include "common/base/logging.h"
#include "common/base/status_macros.h"
#include "common/base/utf8.h"
#include "common/grading/scoring.h"
#include "common/healthbench/prompts.h"
#include "common/retry/retry_status.h"
#include "google/protobuf/duration.pb.h"
#include "grader_client/grade_item_request.h"
#include "grader_client/reply_signal.h"

namespace hb::env {

using healthbench::grader::v1::GradeItemRequest;
using healthbench::grader::v1::GradeItemResponse;

absl::StatusOr<std::vector<Split>> LoadSplits(const std::vector<SplitSpec>& specs) {
  std::vector<Split> splits;
  for (const SplitSpec& spec : specs) {
    if (spec.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("split for ", spec.path, " has no name"));
    }
    for (const Split& split : splits) {
      if (split.name == spec.name) {
        return absl::InvalidArgumentError(absl::StrCat("split '", spec.name, "' given twice"));
      }
    }
    absl::StatusOr<Dataset> dataset = LoadDataset(spec.path, LoadOptions{});
    if (!dataset.ok()) return dataset.status();
    splits.push_back(Split{spec.name, *std::move(dataset)});
  }
  return splits;
}

// One distinct submission being graded; every field is guarded by the environment's mu_.
struct HealthBenchEnvironment::Grading {
  struct Waiter {
    SubmitCallback done;
    absl::Time start;
    // The split the waiter named (a grading is shared by every split holding the same record).
    std::string split;
  };
  std::string key;
  // The group of its items in the dispatch queue.
  uint64_t id = 0;
  const Example* example = nullptr;
  Response response;
  absl::Time deadline;
  std::vector<std::optional<GradeItemResponse>> verdicts;
  // Items not over yet (queued or in flight).
  size_t outstanding = 0;
  // The first judge failure; the grading then fails whole.
  absl::Status failure;
  // The longest judge call so far (from GradeItem to its callback).
  absl::Duration slowest_item;
  std::vector<Waiter> waiters;
};

HealthBenchEnvironment::HealthBenchEnvironment(std::vector<Split> splits, GraderClient& grader,
                                               Clock& clock, Scheduler& scheduler,
                                               HealthBenchEnvironmentOptions options,
                                               EnvMetrics* metrics)
    : splits_(std::move(splits)),
      grader_(grader),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      cache_(options_.cache_entries, options_.cache_store),
      failure_log_(clock, {}),
      dispatch_(scheduler, [&] {
        PacedQueueOptions queue;
        queue.max_in_flight = std::max(1, options_.max_upstream_in_flight);
        queue.adaptive = options_.adaptive;
        queue.clock = &clock_;
        return queue;
      }()) {
  cache_ids_.resize(splits_.size());
  for (size_t s = 0; s < splits_.size(); ++s) {
    for (size_t i = 0; i < splits_[s].dataset.examples.size(); ++i) {
      const Example& example = splits_[s].dataset.examples[i];
      by_id_[example.prompt_id].push_back(TaskLocation{s, i});
      cache_ids_[s].push_back(TaskCacheId(example));
    }
  }
}

HealthBenchEnvironment::~HealthBenchEnvironment() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  // The queued items end their gradings with kCancelled; then the calls in flight.
  dispatch_.Close("the environment is shutting down");
  grader_.CancelAll();
  absl::MutexLock lock(&mu_);
  while (in_flight_ > 0) idle_cv_.Wait(&mu_);
}

std::vector<SplitInfo> HealthBenchEnvironment::ListSplits() const {
  std::vector<SplitInfo> out;
  for (const Split& split : splits_) {
    out.push_back(SplitInfo{split.name, static_cast<int64_t>(split.dataset.examples.size())});
  }
  return out;
}

absl::StatusOr<std::vector<TaskSummary>> HealthBenchEnvironment::ListTasks(absl::string_view split,
                                                                           int64_t start,
                                                                           int64_t stop) const {
  HB_ASSIGN_OR_RETURN(const size_t s, SplitIndex(split));
  if (start < 0 || start > stop) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad range [", start, ", ", stop, "): need 0 <= start <= stop"));
  }
  const int64_t size = static_cast<int64_t>(splits_[s].dataset.examples.size());
  std::vector<TaskSummary> out;
  for (int64_t i = start; i < std::min(stop, size); ++i) {
    out.push_back(SummaryOf(TaskLocation{s, static_cast<size_t>(i)}));
  }
  return out;
}

absl::StatusOr<size_t> HealthBenchEnvironment::SplitIndex(absl::string_view name) const {
  for (size_t s = 0; s < splits_.size(); ++s) {
    if (splits_[s].name == name) return s;
  }
  return absl::NotFoundError(absl::StrCat("unknown split '", name, "'"));
}

std::string HealthBenchEnvironment::SplitNames(const std::vector<TaskLocation>& locations) const {
  std::vector<std::string> names;
  for (const TaskLocation& at : locations) {
    names.push_back(absl::StrCat("'", splits_[at.split].name, "'"));
  }
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<HealthBenchEnvironment::TaskLocation> HealthBenchEnvironment::Resolve(
    const TaskRef& ref) const {
  if (!ref.task_id.empty() && ref.index.has_value()) {
    return absl::InvalidArgumentError(
        "give a task by task_id (with its split when several splits hold it) or by split and "
        "index, not by task_id and index");
  }
  if (ref.task_id.empty() && ref.split.empty()) {
    return absl::InvalidArgumentError("give a task by task_id or by split and index");
  }
  if (!ref.task_id.empty()) return ResolveId(ref);
  HB_ASSIGN_OR_RETURN(const size_t s, SplitIndex(ref.split));
  const int64_t size = static_cast<int64_t>(splits_[s].dataset.examples.size());
  const int64_t index = ref.index.value_or(0);
  if (index < 0 || index >= size) {
    return absl::OutOfRangeError(
        absl::StrCat("index ", index, " is outside split '", ref.split, "' (", size, " tasks)"));
  }
  return TaskLocation{s, static_cast<size_t>(index)};
}

absl::StatusOr<HealthBenchEnvironment::TaskLocation> HealthBenchEnvironment::ResolveId(
    const TaskRef& ref) const {
  auto it = by_id_.find(ref.task_id);
  if (!ref.split.empty()) {
    HB_ASSIGN_OR_RETURN(const size_t s, SplitIndex(ref.split));
    if (it == by_id_.end()) {
      return absl::NotFoundError(absl::StrCat("unknown task id '", ref.task_id, "'"));
    }
    for (const TaskLocation& at : it->second) {
      if (at.split == s) return at;
    }
    return absl::NotFoundError(absl::StrCat("task id '", ref.task_id, "' is not in split '",
                                            ref.split, "' (it is in ", SplitNames(it->second),
                                            ")"));
  }
  if (it == by_id_.end()) {
    // "SPLIT/ID": the one-string form of (split, id).
    const size_t slash = ref.task_id.find('/');
    if (slash != std::string::npos && SplitIndex(ref.task_id.substr(0, slash)).ok()) {
      return ResolveId(
          TaskRef::InSplit(ref.task_id.substr(0, slash), ref.task_id.substr(slash + 1)));
    }
    return absl::NotFoundError(absl::StrCat("unknown task id '", ref.task_id, "'"));
  }
  if (it->second.size() == 1) return it->second.front();
  const std::string& first = splits_[it->second.front().split].name;
  return absl::InvalidArgumentError(absl::StrCat(
      "task id '", ref.task_id, "' is in ", it->second.size(), " splits (", SplitNames(it->second),
      "), each graded against its own rubric: name the split (gRPC "
      "TaskRef.split, ORS task_spec {\"prompt_id\", \"split\"}, or the id '",
      first, "/", ref.task_id, "' where only one string is taken)"));
}

const Example& HealthBenchEnvironment::ExampleAt(TaskLocation at) const {
  return splits_[at.split].dataset.examples[at.index];
}

TaskSummary HealthBenchEnvironment::SummaryOf(TaskLocation at) const {
  const Example& example = ExampleAt(at);
  return TaskSummary{example.prompt_id, splits_[at.split].name, static_cast<int64_t>(at.index),
                     example.example_tags};
}

absl::StatusOr<TaskPrompt> HealthBenchEnvironment::GetTask(const TaskRef& ref) const {
  absl::StatusOr<TaskLocation> at = Resolve(ref);
  if (!at.ok()) return at.status();
  const Example& example = ExampleAt(*at);
  return TaskPrompt{SummaryOf(*at), example.prompt, TaskPromptText(example.prompt)};
}

void HealthBenchEnvironment::Submit(const TaskRef& ref, std::string reply, absl::Time deadline,
                                    SubmitCallback done) {
  const absl::Time start = clock_.Now();
  auto reject = [&](absl::Status status) {
    if (metrics_ != nullptr) metrics_->SubmitFinished(status.code(), false, clock_.Now() - start);
    done(std::move(status));
  };
  absl::StatusOr<TaskLocation> at = Resolve(ref);
  if (!at.ok()) return reject(at.status());
  if (reply.size() > options_.max_reply_bytes) {
    return reject(absl::InvalidArgumentError(
        absl::StrCat("reply is ", reply.size(), " bytes; the limit is ", options_.max_reply_bytes,
                     " bytes (--max-reply-bytes)")));
  }
  // Raw bytes must never reach the judge's JSON request (every route and RPC lands here).
  if (absl::Status text = CheckUtf8("reply", reply); !text.ok()) return reject(std::move(text));
  const Example& example = ExampleAt(*at);
  const std::string& split = splits_[at->split].name;
  std::string key =
      SubmissionKey(cache_ids_[at->split][at->index], reply, options_.grader_fingerprint);
  if (std::optional<SubmitResult> hit = cache_.Find(key)) {
    hit->split = split;  // the same record may have been graded through another split
    hit->from_cache = true;
    hit->usage = TokenCounts{};
    if (metrics_ != nullptr) {
      metrics_->CacheHit();
      metrics_->SubmitFinished(absl::StatusCode::kOk, true, clock_.Now() - start);
    }
    return done(*std::move(hit));
  }
  absl::Status refused;
  std::shared_ptr<Grading> started;
  {
    absl::MutexLock lock(&mu_);
    auto it = gradings_.find(key);
    if (shutting_down_) {
      refused = absl::CancelledError("the environment is shutting down");
    } else if (it != gradings_.end()) {
      it->second->waiters.push_back(Grading::Waiter{std::move(done), start, split});
      if (metrics_ != nullptr) metrics_->SharedInFlight();
      return;
    } else if (static_cast<int64_t>(gradings_.size()) >= options_.max_pending) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "backlog full: ", options_.max_pending, " submissions are being graded (",
          "--max-pending); retry after ", absl::FormatDuration(options_.backlog_retry_delay)));
      SetRetryDelay(refused, options_.backlog_retry_delay);
      MarkServerBusy(refused);  // hb-env's own capacity, not the judge's rate limit
    } else {
      started = std::make_shared<Grading>();
      started->key = key;
      started->id = next_grading_id_++;
      started->example = &example;
      started->response = Response{example.prompt_id, std::move(reply), std::nullopt, 0};
      started->deadline = deadline;
      started->verdicts.resize(example.rubrics.size());
      started->outstanding = example.rubrics.size();
      started->waiters.push_back(Grading::Waiter{std::move(done), start, split});
      gradings_.emplace(std::move(key), started);
    }
  }
  if (!refused.ok()) return reject(std::move(refused));
  if (example.rubrics.empty()) return ItemEnded(started, absl::OkStatus());
  std::vector<PacedQueue::Work> items;
  items.reserve(example.rubrics.size());
  for (size_t i = 0; i < example.rubrics.size(); ++i) items.push_back(ItemWork(started, i));
  // Queued together: a judge failure that arrives meanwhile drops all of them or none.
  dispatch_.PushAll(std::move(items), PacedQueue::Lane::kBack, started->id);
}

PacedQueue::Work HealthBenchEnvironment::ItemWork(std::shared_ptr<Grading> grading, size_t item) {
  return [this, grading = std::move(grading), item](absl::StatusOr<DispatchTicket> ticket) {
    if (!ticket.ok()) return ItemEnded(grading, ticket.status());
    StartItem(grading, item, *ticket);
  };
}

void HealthBenchEnvironment::StartItem(const std::shared_ptr<Grading>& grading, size_t item,
                                       DispatchTicket ticket) {
  {
    // Sent even when the grading failed since it was admitted (as a call already in flight):
    // its result then always comes from the grader, never inline from Submit.
    absl::MutexLock lock(&mu_);
    ++in_flight_;
  }
  const int index = static_cast<int>(item);
  // Request ids as run's ("<checkpoint>/<prompt_id>/<rubric_index>/<attempt>"), checkpoint
  // "env".
  const GradeItemRequest request =
      BuildGradeItemRequest(*grading->example, grading->response, index,
                            absl::StrCat("env/", grading->example->prompt_id, "/", index, "/1"),
                            /*send_prompt_cache_key=*/true);
  const absl::Time sent = clock_.Now();
  const absl::Duration timeout = grading->deadline == absl::InfiniteFuture()
                                     ? options_.item_timeout
                                     : grading->deadline - sent;
  auto done = [this, grading, item, ticket, sent](absl::StatusOr<GradeItemResponse> result) {
    OnItemDone(grading, item, ticket, sent, std::move(result));
  };
  if (timeout <= absl::ZeroDuration()) {
    done(absl::DeadlineExceededError("the submission's deadline passed before grading"));
  } else {
    grader_.GradeItem(request, timeout, std::move(done));
  }
}

void HealthBenchEnvironment::OnItemDone(const std::shared_ptr<Grading>& grading, size_t item,
                                        DispatchTicket ticket, absl::Time sent,
                                        absl::StatusOr<GradeItemResponse> result) {
  dispatch_.Finish(ticket, ReplySignalOf(result));
  bool failed_now = false;
  {
    absl::MutexLock lock(&mu_);
    grading->slowest_item = std::max(grading->slowest_item, clock_.Now() - sent);
    if (!result.ok() && metrics_ != nullptr) metrics_->JudgeFailure(result.status().code());
    if (grading->failure.ok()) {
      if (result.ok()) {
        grading->verdicts[item] = *std::move(result);
      } else {
        grading->failure = result.status();
        failed_now = true;
      }
    }
  }
  // The grading fails whole: its items still queued are not sent.
  if (failed_now) dispatch_.Cancel(grading->id, "the grading already failed");
  ItemEnded(grading, absl::OkStatus());
  absl::MutexLock lock(&mu_);
  if (--in_flight_ == 0) idle_cv_.SignalAll();
}

void HealthBenchEnvironment::ItemEnded(const std::shared_ptr<Grading>& grading,
                                       const absl::Status& failure) {
  {
    absl::MutexLock lock(&mu_);
    if (!failure.ok() && grading->failure.ok()) grading->failure = failure;
    if (grading->outstanding > 0) --grading->outstanding;
    if (grading->outstanding > 0) return;
    gradings_.erase(grading->key);
  }
  Complete(*grading);
}

void HealthBenchEnvironment::Complete(Grading& grading) {
  absl::StatusOr<SubmitResult> outcome =
      grading.failure.ok() ? Finish(grading) : absl::StatusOr<SubmitResult>(grading.failure);
  if (outcome.ok()) {
    cache_.Put(grading.key, *outcome);
    if (metrics_ != nullptr) {
      metrics_->Reward(outcome->reward);
      // Over the submission that started the grading (the others joined it later).
      metrics_->AddedLatency(clock_.Now() - grading.waiters.front().start - grading.slowest_item);
    }
  }
  if (!outcome.ok() && outcome.status().code() != absl::StatusCode::kCancelled) {
    LogFailure(grading, outcome.status());
  }
  for (Grading::Waiter& waiter : grading.waiters) {
    if (metrics_ != nullptr) {
      metrics_->SubmitFinished(outcome.status().code(), false, clock_.Now() - waiter.start);
    }
    absl::StatusOr<SubmitResult> answer = outcome;
    if (answer.ok()) answer->split = waiter.split;
    waiter.done(std::move(answer));
  }
}

void HealthBenchEnvironment::LogFailure(const Grading& grading, const absl::Status& status) {
  const std::string kind(absl::StatusCodeToString(status.code()));
  if (std::optional<std::string> suffix = failure_log_.Admit(kind)) {
    HB_LOG_WARN("hb-env: task {} not graded{}: {}: {} ({} caller(s) got this error, no reward)",
                grading.example->prompt_id, *suffix, kind,
                std::string(status.message().substr(0, 300)), grading.waiters.size());
  }
}

std::string ScoringFingerprint(const std::string& grader_fingerprint,
                               const HealthBenchEnvironmentOptions& options) {
  if (!options.length_adjustment.has_value()) return grader_fingerprint;
  return absl::StrCat(grader_fingerprint, "|length_adjustment ",
                      JsonNumber(options.length_adjustment->center), " ",
                      JsonNumber(options.length_adjustment->penalty_per_500_chars), "|reward ",
                      options.reward_length_adjusted ? "length_adjusted" : "raw");
}

absl::StatusOr<SubmitResult> HealthBenchEnvironment::Finish(const Grading& grading) const {
  const Example& example = *grading.example;
  SubmitResult result;
  result.task_id = example.prompt_id;
  std::vector<bool> met;
  for (size_t i = 0; i < example.rubrics.size(); ++i) {
    const GradeItemResponse& verdict = *grading.verdicts[i];
    const RubricItem& rubric = example.rubrics[i];
    met.push_back(verdict.criteria_met());
    result.items.push_back(
        ItemResult{rubric.criterion, rubric.points, verdict.criteria_met(), verdict.explanation()});
    if (verdict.criteria_met()) result.points_met += rubric.points;
    if (rubric.points > 0) result.points_possible += rubric.points;
    if (verdict.from_cache()) continue;  // a verdict-cache hit spent nothing
    result.usage.prompt_tokens += verdict.usage().prompt_tokens();
    result.usage.cached_prompt_tokens += verdict.usage().cached_prompt_tokens();
    result.usage.completion_tokens += verdict.usage().completion_tokens();
  }
  absl::StatusOr<OrderedMetrics> scores =
      ScoreTask(example.prompt_id, example.example_tags, example.rubrics, met);
  if (!scores.ok()) return scores.status();
  if (options_.length_adjustment.has_value()) {
    HB_RETURN_IF_ERROR(
        AddLengthAdjustedScore(grading.response.response, *options_.length_adjustment, *scores));
  }
  for (const auto& [name, value] : *scores) {
    if (name == "overall_score") {
      result.reward = value;
    } else {
      result.tag_scores[name] = value;
    }
  }
  if (options_.reward_length_adjusted) result.reward = result.tag_scores[kLengthAdjustedScoreKey];
  result.reward_clipped = std::clamp(result.reward, 0.0, 1.0);
  return result;
}

int64_t HealthBenchEnvironment::upstream_in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

int64_t HealthBenchEnvironment::pending() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(gradings_.size());
}

}  // namespace hb::env
