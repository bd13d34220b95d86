// Loading the responses to grade: JSONL, one object per line,
//   {"prompt_id": str, "response": str, "system_prompt": str (optional)}.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/types.h"

namespace hb {

struct ResponseSet {
  std::string path;
  std::string sha256;
  std::vector<Response> responses;
  // prompt_id -> index into `responses`.
  absl::flat_hash_map<std::string, size_t> index;
  // Lines whose prompt_id is not in the dataset, skipped under
  // ResponseLoadOptions::ignore_extra (always 0 otherwise).
  int64_t ignored_extra = 0;

  // The response for `prompt_id`, or nullptr when the task has none (it is then reported as
  // not graded, never scored as zero).
  const Response* Find(const std::string& prompt_id) const;
};

// Loads `path` and checks it against `dataset`. Every line must be an object with string
// `prompt_id` and `response` (an empty response is legal), and optional string
// `system_prompt`. Errors (kInvalidArgument, "<path>:<line>: ..."): invalid JSON, a missing or
// mistyped field, a prompt_id that is not in the dataset ("unknown prompt_id '...'"), a
// prompt_id seen twice ("duplicate prompt_id '...' (first on line N)"), a file of responses
// none of which is for a task of the dataset ("<path>: no response is for a task of <dataset>
// ...", with or without ResponseLoadOptions::ignore_extra). Field errors read
// "field 'response': missing" / "field 'response': expected a string, got null"; a null
// `system_prompt` counts as absent; blank lines and invalid JSON fail as in LoadDataset.
// Read errors as for LoadDataset. `sha256` is of the file's bytes as stored.
absl::StatusOr<ResponseSet> LoadResponses(const std::string& path, const Dataset& dataset);

struct ResponseLoadOptions {
  // A response whose prompt_id is not in the dataset is counted in ResponseSet::ignored_extra
  // and dropped instead of being an error (grading a subset such as Hard or Consensus with the
  // responses to the whole set). Every line is still parsed and checked, duplicates included.
  bool ignore_extra = false;
};
absl::StatusOr<ResponseSet> LoadResponses(const std::string& path, const Dataset& dataset,
                                          const ResponseLoadOptions& options);

}  // namespace hb
