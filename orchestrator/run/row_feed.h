// The rows of a run as they become known: all at once for responses files, task by task for a
// policy sampled while the run grades (`run --policy`). RowFeed routes them to the run's two
// dispatchers (the first row to the probe, graded alone; every later row to the main one);
// ArrivingResponses keeps the responses that arrive and plans their rows.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/healthbench/dataset.h"
#include "orchestrator/run/dispatcher.h"
#include "orchestrator/run/row_plan.h"

namespace hb {

// Thread-safe. Both dispatchers are not owned and must outlive the feed's last call.
class RowFeed {
 public:
  RowFeed(Dispatcher* probe, Dispatcher* rest) : probe_(probe), rest_(rest) {}

  // The first row ever added goes to `probe` (whose input then closes), the others to `rest`,
  // in order.
  void Add(std::vector<PlannedRow> rows);
  // No more rows: closes both dispatchers' input.
  void Close();

 private:
  Dispatcher* const probe_;
  Dispatcher* const rest_;
  absl::Mutex mu_;
  bool probe_fed_ ABSL_GUARDED_BY(mu_) = false;
};

// Responses that arrive while a run grades. Thread-safe.
class ArrivingResponses {
 public:
  // `dataset` (the run's tasks) and `done` (rows already graded) are not owned and must outlive
  // this.
  ArrivingResponses(const Dataset& dataset, const absl::flat_hash_set<RowKey>& done)
      : dataset_(dataset), done_(done) {}

  // Keeps `response` at a stable address (for as long as this lives: the rows point at it) and
  // returns its rows for `checkpoint` (not owned) that are not in `done`, in rubric order; none
  // for a task outside the dataset.
  std::vector<PlannedRow> Add(const std::string* checkpoint, Response response);

 private:
  const Dataset& dataset_;
  const absl::flat_hash_set<RowKey>& done_;
  absl::Mutex mu_;
  std::deque<Response> responses_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
