#include "common/healthbench/unscorable_tasks.h"

#include "absl/container/flat_hash_set.h"

namespace hb {

std::vector<UnscorableTask> FindUnscorableTasks(const Dataset& dataset) {
  std::vector<UnscorableTask> out;
  for (const Example& example : dataset.examples) {
    double positive = 0;
    for (const RubricItem& item : example.rubrics) {
      if (item.points > 0) positive += item.points;
    }
    if (positive == 0)
      out.push_back(UnscorableTask{example.prompt_id, example.line, kUnscorableReason});
  }
  return out;
}

void RemoveTasks(Dataset& dataset, const std::vector<UnscorableTask>& tasks) {
  if (tasks.empty()) return;
  absl::flat_hash_set<std::string> ids;
  for (const UnscorableTask& task : tasks) ids.insert(task.prompt_id);
  KeepExamples(dataset, [&ids](const Example& e) { return !ids.contains(e.prompt_id); });
}

}  // namespace hb
