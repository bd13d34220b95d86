// Loading and validating the official meta-eval JSONL file (SPEC §2.2, §15: the grader's verdicts
// against physicians' labels), and the reference's `--examples N` selection of its rows.
//
//   HB_ASSIGN_OR_RETURN(MetaEvalDataset data, LoadMetaEvalDataset(path));
//   SelectMetaEvalRows(data, 500);  // random.Random(0).sample(rows, 500)
//   for (const MetaEvalRow& row : data.rows) ... MetaEvalGraderPrompt(tmpl, row) ...
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

struct MetaEvalDataset {
  std::string path;
  // sha256 of the file's bytes as stored (compressed bytes for a .gz file).
  std::string sha256;
  std::vector<MetaEvalRow> rows;
};

// Loads and validates every row of `path` (plain or gzip). A row must be an object with:
// `prompt`, a list (possibly empty) of {role: string, content: string}; `completion`, `rubric`
// and `category`, strings; `binary_labels`, a non-empty list of booleans (the reference divides
// by its length); `anonymized_physician_ids`, a list of strings of the same length (the
// reference pairs them by position). `prompt_id` and `completion_id` are optional strings.
// Other keys are ignored. Rows need not be unique (the official file repeats a conversation
// once per criterion).
//
// Errors are kInvalidArgument "<path>:<line>: <what>", as LoadDataset's (dataset.h):
// "field 'binary_labels[2]': expected a boolean, got number", "field 'binary_labels': empty
// list", "field 'anonymized_physician_ids': 2 ids for 3 binary_labels (one id per label)",
// "field 'prompt[0].content': missing", "blank line", "invalid JSON: ... at offset N".
// kNotFound / kPermissionDenied / kFailedPrecondition / kDataLoss come from reading the file.
// Lines split on '\n' only; a final newline is optional; an empty file gives no rows.
absl::StatusOr<MetaEvalDataset> LoadMetaEvalDataset(const std::string& path);

// Parses one JSONL row; `path` and `line` are used in errors and `line` is stored in the row.
absl::StatusOr<MetaEvalRow> ParseMetaEvalRow(absl::string_view json, const std::string& path,
                                             int line);

// The reference's `--examples k`: keeps the rows random.Random(0).sample(rows, k) picks, in
// sample order (SampleIndices in dataset.h); when k >= the number of rows, keeps them all in
// file order.
void SelectMetaEvalRows(MetaEvalDataset& dataset, size_t k);

}  // namespace hb
