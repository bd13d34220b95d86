// TrainerApi: the logic of hb-env's trainer routes over an Environment, without transport:
// parses a trainer's request (trainer_protocols.h), submits its replies and formats the answer
// the trainer reads. The HTTP transport maps an error status to its HTTP code (4xx for a bad
// request or an unknown task, 429 with Retry-After for a full backlog, 5xx for a reply that
// could not be graded, so that OpenRLHF's and slime's clients retry).
//
//   OpenRlhfGetReward  POST /get_reward: every sample submitted at once; answered when all are
//                      graded. When a sample cannot be graded the request fails with that
//                      sample's status (the first by index), the message naming it:
//                        labels[1] (task "abc") could not be graded: UNAVAILABLE: ...
//                      The samples already graded stay in the environment's result cache, so
//                      the trainer's retry of the batch only grades the rest.
//   SlimeReward        POST /reward: one sample; errors as above ("label (task ...)").
//   NemoGymVerify      POST /verify: a reply that could not be graded is OK with NeMo-Gym's
//                      "judge_failed" marker (trainer_protocols.h); other errors are statuses.
//
// A reply that could not be graded (IsJudgeFailure) is always reported as kUnavailable, or
// kDeadlineExceeded when the deadline passed, so that it maps to a 5xx even when the
// Environment said kFailedPrecondition. Never a reward.
//
// With `metrics`, every reward answered counts in TrainerReward and every sample that could not
// be graded in TrainerJudgeFailure, by route ("get_reward", "reward", "verify").
//
// Thread-safe; `done` runs exactly once, inline for a request refused up front or answered
// entirely from the cache, else on an Environment grading thread (it must not block).
#pragma once

#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "environment/env_metrics.h"
#include "environment/environment.h"
#include "environment/trainer_protocols.h"

namespace hb::env {

class TrainerApi {
 public:
  // The answer body, or an error status whose message names the failing sample and task.
  using Done = absl::AnyInvocable<void(absl::StatusOr<std::string>)>;

  // `env` and `metrics` (optional) are not owned and must outlive the api and every pending
  // `done`.
  TrainerApi(Environment& env, TrainerProtocolOptions options, EnvMetrics* metrics = nullptr);

  void OpenRlhfGetReward(absl::string_view body, absl::Time deadline, Done done);
  void SlimeReward(absl::string_view body, absl::Time deadline, Done done);
  void NemoGymVerify(absl::string_view body, absl::Time deadline, Done done);
  // POST /seed_session: HealthBench tasks keep no per-rollout state.
  static std::string NemoGymSeedSession() { return "{}"; }

 private:
  Environment& env_;
  const TrainerProtocolOptions options_;
  EnvMetrics* const metrics_;
};

}  // namespace hb::env
