#include "environment/trainer_api.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/json.h"

namespace hb::env {
namespace {

// `status` of the sample `what` (e.g. `labels[1]`) of task `task_id`, its message naming both;
// a judge failure becomes kUnavailable (kDeadlineExceeded stays) so that it is a 5xx.
absl::Status SampleError(const absl::Status& status, absl::string_view what,
                         const std::string& task_id) {
  const std::string message =
      absl::StrCat(what, " (task ", JsonQuote(task_id), ")",
                   IsJudgeFailure(status) ? " could not be graded" : "", ": ", status.ToString());
  if (IsJudgeFailure(status) && status.code() != absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError(message);
  }
  absl::Status out(status.code(), message);
  // Keep the payloads (e.g. the retry delay of kResourceExhausted).
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// Counts a route's reward or unscorable sample in `metrics` (optional).
void Count(EnvMetrics* metrics, absl::string_view route,
           const absl::StatusOr<SubmitResult>& result) {
  if (metrics == nullptr) return;
  if (result.ok()) {
    metrics->TrainerReward(route, result->reward);
  } else if (IsJudgeFailure(result.status())) {
    metrics->TrainerJudgeFailure(route);
  }
}

// The state of one OpenRLHF batch: results by index, answered when the last one arrives.
struct Batch {
  Batch(std::vector<TrainerSample> batch_samples, EnvMetrics* batch_metrics,
        TrainerApi::Done batch_done)
      : samples(std::move(batch_samples)),
        metrics(batch_metrics),
        results(samples.size()),
        done(std::move(batch_done)) {}

  void Finish(size_t index, absl::StatusOr<SubmitResult> result) {
    std::vector<std::optional<absl::StatusOr<SubmitResult>>> all;
    {
      absl::MutexLock lock(&mu);
      results[index] = std::move(result);
      if (++finished < results.size()) return;
      all = std::move(results);
    }
    // The last result is in: only this thread touches `done` now. Rewards count only when the
    // batch is answered with them; every unscorable sample counts.
    const bool all_graded =
        std::all_of(all.begin(), all.end(), [](const auto& each) { return each->ok(); });
    for (const auto& each : all) {
      if (all_graded || !each->ok()) Count(metrics, "get_reward", *each);
    }
    std::vector<SubmitResult> graded;
    graded.reserve(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      if (!all[i]->ok()) {
        return done(
            SampleError(all[i]->status(), absl::StrCat("labels[", i, "]"), samples[i].task_id));
      }
      graded.push_back(**std::move(all[i]));
    }
    done(FormatOpenRlhfAnswer(graded));
  }

  const std::vector<TrainerSample> samples;
  EnvMetrics* const metrics;
  absl::Mutex mu;
  std::vector<std::optional<absl::StatusOr<SubmitResult>>> results ABSL_GUARDED_BY(mu);
  size_t finished ABSL_GUARDED_BY(mu) = 0;
  TrainerApi::Done done;
};

}  // namespace

TrainerApi::TrainerApi(Environment& env, TrainerProtocolOptions options, EnvMetrics* metrics)
    : env_(env), options_(std::move(options)), metrics_(metrics) {}

void TrainerApi::OpenRlhfGetReward(absl::string_view body, absl::Time deadline, Done done) {
  absl::StatusOr<std::vector<TrainerSample>> samples = ParseOpenRlhfRequest(body, options_);
  if (!samples.ok()) return done(samples.status());
  if (samples->empty()) return done(FormatOpenRlhfAnswer({}));
  auto batch = std::make_shared<Batch>(*std::move(samples), metrics_, std::move(done));
  for (size_t i = 0; i < batch->samples.size(); ++i) {
    const TrainerSample& sample = batch->samples[i];
    env_.Submit(
        TaskRef::ById(sample.task_id), sample.reply, deadline,
        [batch, i](absl::StatusOr<SubmitResult> result) { batch->Finish(i, std::move(result)); });
  }
}

void TrainerApi::SlimeReward(absl::string_view body, absl::Time deadline, Done done) {
  absl::StatusOr<TrainerSample> sample = ParseSlimeRequest(body, options_);
  if (!sample.ok()) return done(sample.status());
  env_.Submit(TaskRef::ById(sample->task_id), sample->reply, deadline,
              [task_id = sample->task_id, metrics = metrics_,
               done = std::move(done)](absl::StatusOr<SubmitResult> result) mutable {
                Count(metrics, "reward", result);
                if (!result.ok()) return done(SampleError(result.status(), "label", task_id));
                done(FormatSlimeAnswer(*result));
              });
}

void TrainerApi::NemoGymVerify(absl::string_view body, absl::Time deadline, Done done) {
  absl::StatusOr<NemoGymVerifyRequest> parsed = ParseNemoGymVerify(body, options_);
  if (!parsed.ok()) return done(parsed.status());
  auto request = std::make_shared<NemoGymVerifyRequest>(*std::move(parsed));
  env_.Submit(TaskRef::ById(request->sample.task_id), request->sample.reply, deadline,
              [request, metrics = metrics_,
               done = std::move(done)](absl::StatusOr<SubmitResult> result) mutable {
                Count(metrics, "verify", result);
                if (result.ok()) return done(FormatNemoGymVerifyAnswer(*request, *result));
                if (IsJudgeFailure(result.status())) {
                  return done(FormatNemoGymJudgeFailure(*request, result.status()));
                }
                done(SampleError(result.status(), "prompt_id", request->sample.task_id));
              });
}

}  // namespace hb::env
