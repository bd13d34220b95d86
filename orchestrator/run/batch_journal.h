// BatchJournal: what `run --grader-mode batch` journals before it waits on the Batch API, so a
// killed run resumes polling the same batches and never submits the same rows twice.
// SqliteVerdictStore implements it (tables `batches` and `batch_rows` of journal.sqlite);
// tests may use an in-memory fake.
//
// A batch goes through these states, each journaled (committed) before the next step starts:
//   written    its input file is complete on disk (`input_path`), its rows are journaled
//   uploaded   the file was uploaded (`file_id`)
//   submitted  the batch was created (`batch_id`): from here on its rows are never sent again
//              until its results were recorded
//   done       its output and error files were read and every answered row recorded
// A row stays in batch_rows (with the attempts made so far) from its first batch until it is
// recorded in the verdict journal as graded or finally failed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "orchestrator/run/verdict_store.h"

namespace hb {

struct BatchRecord {
  // Unique, e.g. "batch-000001" (its input file is <run dir>/batch/<name>.jsonl).
  std::string name;
  std::string input_path;
  int64_t requests = 0;
  std::string file_id;
  std::string batch_id;
  // written, uploaded, submitted, done.
  std::string state;
};

// A row sent in a batch: its key, the batch (name) that holds its latest attempt, and how many
// attempts it has had so far.
struct BatchRowEntry {
  RowKey key;
  std::string batch;
  int attempts = 0;
};

class BatchJournal {
 public:
  virtual ~BatchJournal() = default;

  // Every batch, in name order.
  virtual absl::StatusOr<std::vector<BatchRecord>> Batches() = 0;
  // Inserts or replaces `batch` and, in the same transaction, inserts or replaces `rows`.
  // Committed when it returns. Thread-safe.
  virtual absl::Status SaveBatch(const BatchRecord& batch,
                                 const std::vector<BatchRowEntry>& rows) = 0;
  // Every row in batch_rows.
  virtual absl::StatusOr<std::vector<BatchRowEntry>> BatchRows() = 0;
  // Removes these rows from batch_rows (they are recorded in the verdict journal). Committed
  // when it returns.
  virtual absl::Status ForgetBatchRows(const std::vector<RowKey>& keys) = 0;
};

}  // namespace hb
