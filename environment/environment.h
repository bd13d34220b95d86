// Environment: HealthBench served as an environment, independent of transport. An agent lists
// tasks, reads a task's prompt, submits one reply for a task id and gets a reward back; the
// rubric stays on the server side and is never part of anything returned here except the
// per-item verdicts of a graded reply.
//
// Two transports sit on top of this interface: the gRPC service `healthbench.env.v1.Environment`
// (environment/grpc/) and the Open Reward Standard HTTP API (environment/ors/). The
// implementation that grades (HealthBenchEnvironment, environment/healthbench_environment.h)
// and test doubles (tests/testing/fake_environment.h) implement it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/healthbench/types.h"

namespace hb::env {

// One named dataset loaded at start (`--split NAME=PATH`).
struct SplitInfo {
  std::string name;
  int64_t task_count = 0;
};

// What an agent may know of a task without its rubric. A task is (split, task_id): the same
// prompt_id may be in several splits (HealthBench's Hard and Consensus are subsets of the main
// set by prompt_id, Consensus with its own rubric for the same conversation), each with the
// rubric of its own file.
struct TaskSummary {
  // The record's prompt_id: unique within its split.
  std::string task_id;
  std::string split;
  // 0-based position in the split's file order.
  int64_t index = 0;
  // The record's example_tags (e.g. "theme:emergency_referrals").
  std::vector<std::string> tags;
};

// A task as shown to an agent.
struct TaskPrompt {
  TaskSummary task;
  // The conversation, ending with a user turn.
  std::vector<Message> messages;
  // The seed rendering (TaskPromptText in common/healthbench/prompts.h): exactly what
  // `hb-orchestrator tasks` writes.
  std::string prompt_text;
};

// Addresses a task in one of three forms:
//   task_id + split   the task of that id in that split;
//   split + index     the index-th task of the split (0-based, file order);
//   task_id alone     the task of that id when exactly one split holds it. An id that several
//                     splits hold is refused (kInvalidArgument listing them: the rubrics differ,
//                     so no split is picked silently). An id no split holds but of the form
//                     "SPLIT/ID", with SPLIT a loaded split holding ID, names ID in SPLIT (for
//                     callers that can pass only one string, e.g. a trainer's label).
// task_id and index together are kInvalidArgument.
struct TaskRef {
  std::string task_id;
  std::string split;
  std::optional<int64_t> index;

  static TaskRef ById(std::string id) { return TaskRef{std::move(id), "", std::nullopt}; }
  static TaskRef InSplit(std::string split, std::string id) {
    return TaskRef{std::move(id), std::move(split), std::nullopt};
  }
  static TaskRef ByIndex(std::string split, int64_t index) {
    return TaskRef{"", std::move(split), index};
  }
  bool operator==(const TaskRef& o) const {
    return task_id == o.task_id && split == o.split && index == o.index;
  }
};

// The verdict on one rubric item of a graded reply.
struct ItemResult {
  std::string criterion;
  double points = 0;
  bool met = false;
  std::string explanation;
};

struct TokenCounts {
  int64_t prompt_tokens = 0;
  int64_t cached_prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// The graded reply. `reward` is the reference's per-task score: signed points of met items over
// the total positive points, unclipped (it can be negative).
struct SubmitResult {
  std::string task_id;
  // The split the task was resolved in (its rubric graded the reply).
  std::string split;
  double reward = 0;
  // `reward` clipped to [0, 1].
  double reward_clipped = 0;
  double points_met = 0;
  double points_possible = 0;
  // In rubric order.
  std::vector<ItemResult> items;
  // The per-task metrics of the reference (ScoreTask in common/grading/scoring.h) other than
  // "overall_score": each example tag and each rubric tag with positive points.
  std::map<std::string, double> tag_scores;
  // Summed over every judge call made for this reply (zero when answered from the cache).
  TokenCounts usage;
  // True when the result was answered from the result cache, not graded anew.
  bool from_cache = false;
};

class Environment {
 public:
  virtual ~Environment() = default;

  // The splits in the order they were given at start. Thread-safe.
  virtual std::vector<SplitInfo> ListSplits() const = 0;

  // Tasks [start, stop) of `split` in file order; `stop` is clamped to the split's size.
  // kNotFound for an unknown split; kInvalidArgument when start < 0 or start > stop.
  // Thread-safe.
  virtual absl::StatusOr<std::vector<TaskSummary>> ListTasks(absl::string_view split, int64_t start,
                                                             int64_t stop) const = 0;

  // kNotFound for an unknown task id or split, or an id its split does not hold; kOutOfRange
  // for an index outside the split; kInvalidArgument when `ref` sets task_id and index, or
  // neither task_id nor split, or a bare task_id that several splits hold (the message lists
  // them and how to name one). Thread-safe.
  virtual absl::StatusOr<TaskPrompt> GetTask(const TaskRef& ref) const = 0;

  using SubmitCallback = absl::AnyInvocable<void(absl::StatusOr<SubmitResult>)>;

  // Grades `reply` (may be empty: it is graded) as the next assistant turn of the task and
  // returns at once; `done` runs exactly once, inline for a request rejected up front (or, in
  // implementations with a result cache, answered from it), else on a grading thread (it must
  // not block). Errors:
  //   kNotFound / kOutOfRange / kInvalidArgument  as GetTask; kInvalidArgument also for a reply
  //                                               over the size limit (the limit is in the
  //                                               message) or not valid UTF-8 (the byte and
  //                                               its offset in the message), never graded;
  //   kResourceExhausted  the backlog is over its bound; retry later (the status carries a
  //                       retry delay and the server-busy mark, see common/retry);
  //   kUnavailable, kDeadlineExceeded, kFailedPrecondition  a rubric item could not be graded
  //                       (never a partial reward);
  //   kCancelled          the environment is shutting down.
  // `deadline` bounds the whole grading (absl::InfiniteFuture() for none). Thread-safe.
  virtual void Submit(const TaskRef& ref, std::string reply, absl::Time deadline,
                      SubmitCallback done) = 0;
};

}  // namespace hb::env
