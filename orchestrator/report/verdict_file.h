// The per-row result files of a graded checkpoint: verdicts.jsonl (one graded rubric row per
// line) and failures.jsonl (one row that could not be graded per line). `hb-orchestrator run`
// and `merge` write them; `score --verdicts` and `merge` read them back, so a checkpoint can be
// re-scored without re-grading.
//
//   verdicts.jsonl: {"verdicts_header":{"checkpoint":"a","responses_sha256":"...",
//                                       "dataset_sha256":"...","grader_template_sha256":"..."}}
//                   {"prompt_id":"p","rubric_index":0,"criteria_met":true,"explanation":"...",
//                    "attempts":1,"prompt_tokens":812,"cached_tokens":0,"completion_tokens":41,
//                    "from_cache":false,"batch":false}
//   failures.jsonl: {"prompt_id":"p","rubric_index":3,"reason":"..."}
//
// The header ties the verdicts to the responses and dataset they grade: a reader refuses
// verdicts of other responses (CheckVerdictsHeader). Files written before the header existed
// have none and still load (the caller warns). Only prompt_id, rubric_index, criteria_met and
// explanation (resp. reason) are required; the usage fields default to attempts 1 and 0
// tokens, from_cache and batch to false. Unknown keys are ignored. A `from_cache` row was answered
// from the grader's verdict cache: its tokens are the cached grading's, saved rather than spent
// (`attempts` counts grader calls, as for any row). A `batch` row was graded through the Batch
// API: its tokens are priced at the batch price factor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/healthbench/dataset.h"

namespace hb {

// One graded rubric row: the grader's verdict on item `rubric_index` of task `prompt_id`.
struct VerdictRow {
  std::string prompt_id;
  int rubric_index = 0;
  bool criteria_met = false;
  std::string explanation;
  int attempts = 1;
  int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  bool from_cache = false;
  // Graded through the Batch API: its tokens were billed at the batch price factor.
  bool batch = false;
};

// One rubric row that could not be graded (retry budget exhausted, permanent error, ...).
struct RowFailure {
  std::string prompt_id;
  int rubric_index = 0;
  std::string reason;
};

// What the verdicts of one verdicts.jsonl grade (its first line).
struct VerdictsHeader {
  std::string checkpoint;
  std::string responses_sha256;
  std::string dataset_sha256;
  std::string grader_template_sha256;  // "" when unknown
};

// A verdicts.jsonl read back.
struct VerdictFile {
  std::optional<VerdictsHeader> header;  // absent in files written before headers existed
  std::vector<VerdictRow> rows;
};

// Reads verdicts.jsonl: the optional header line (first non-blank line only; fields
// checkpoint, responses_sha256, dataset_sha256 required strings, grader_template_sha256
// optional) and the rows, checked as LoadVerdicts does. Besides LoadVerdicts' errors:
//   "<path>:1: field 'verdicts_header.responses_sha256': missing"
//   "<path>:7: a verdicts_header may only be the first line"
absl::StatusOr<VerdictFile> ReadVerdictFile(const std::string& path, const Dataset& dataset);

// OK when `header` is absent (an older file: see MissingVerdictsHeaderWarning) or names the
// responses of sha256 `responses_sha256` and the dataset of sha256 `dataset_sha256`.
// Otherwise kInvalidArgument naming `path`, the field, both sha256 and the fix:
//   "<path> grades responses with sha256 <x> (checkpoint 'a'), but <responses_path> has sha256
//    <y>: pass the responses file that run graded (its summary.json names it under
//    provenance.responses), or grade these responses"
absl::Status CheckVerdictsHeader(const std::string& path,
                                 const std::optional<VerdictsHeader>& header,
                                 const std::string& responses_path,
                                 const std::string& responses_sha256,
                                 const std::string& dataset_sha256);

// The warning for a verdicts.jsonl without a header at `path`.
std::string MissingVerdictsHeaderWarning(const std::string& path);

// The header line of verdicts.jsonl, without the trailing newline.
std::string FormatVerdictsHeader(const VerdictsHeader& header);

// Reads verdicts.jsonl (ReadVerdictFile) and returns its rows; the header is not checked.
// Reads verdicts.jsonl and checks every row against `dataset`. Whitespace-only lines are
// skipped. Errors are kInvalidArgument with the form "<path>:<line>: <what>":
//   "<path>:3: invalid JSON: <why> at offset 12"
//   "<path>:3: expected a JSON object, got array"
//   "<path>:3: field 'criteria_met': missing"
//   "<path>:3: field 'rubric_index': expected an integer, got string"
//   "<path>:3: unknown prompt_id 'abc'"
//   "<path>:3: rubric_index 12 out of range for prompt_id 'abc' (12 rubric items)"
//   "<path>:3: duplicate row for prompt_id 'abc' rubric_index 2 (first on line 1)"
// Read errors keep ReadFile's code (kNotFound, kPermissionDenied, ...).
absl::StatusOr<std::vector<VerdictRow>> LoadVerdicts(const std::string& path,
                                                     const Dataset& dataset);

// Reads failures.jsonl; same checks and messages as LoadVerdicts (field `reason` instead of
// `criteria_met`/`explanation`).
absl::StatusOr<std::vector<RowFailure>> LoadFailures(const std::string& path,
                                                     const Dataset& dataset);

// One line of verdicts.jsonl / failures.jsonl, without the trailing newline.
std::string FormatVerdictLine(const VerdictRow& row);
std::string FormatFailureLine(const RowFailure& failure);

}  // namespace hb
