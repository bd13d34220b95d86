// Loading and validating the official HealthBench JSONL files (main, Hard, Consensus; plain or
// gzip) and HealthBench Professional's file (healthbench_professional_eval.jsonl), and the
// reference's `--examples N` selection.
//
//   HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset("data/oss_eval.jsonl", {}));
//   for (const Example& example : dataset.examples) ...
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/healthbench/types.h"

namespace hb {

// The two record layouts. Detected per file from its first JSON object: one with a
// `rubric_items` key makes the whole file Professional; every record is then validated as such.
enum class DatasetFormat {
  kHealthBench,   // prompt_id, prompt, rubrics[].criterion, example_tags
  kProfessional,  // id, conversation, rubric_items[].criterion|criterion_text, slice fields
};
// "healthbench" / "professional" (reports, provenance).
const char* DatasetFormatName(DatasetFormat format);

struct LoadOptions {
  // When true, an invalid line is skipped and counted in `Dataset::skipped` with its error;
  // when false (the default) the first invalid line fails the load.
  bool skip_invalid = false;
};

// One line that was skipped under `skip_invalid`, with the error that rejected it.
struct SkippedLine {
  int line = 0;
  std::string error;
};

struct Dataset {
  std::string path;
  DatasetFormat format = DatasetFormat::kHealthBench;
  // sha256 of the file's bytes as stored (compressed bytes for a .gz file).
  std::string sha256;
  std::vector<Example> examples;
  std::vector<SkippedLine> skipped;
  // prompt_id -> index into `examples`.
  absl::flat_hash_map<std::string, size_t> index;

  // The example with `prompt_id`, or nullptr.
  const Example* Find(const std::string& prompt_id) const;
};

// Loads and validates every record of `path`. A record must have: `prompt`, a non-empty list
// of {role: string, content: string} whose last turn has role "user"; `rubrics`, a non-empty
// list of {criterion: string, points: number, tags: list of strings}; `example_tags`, a list of
// strings; `prompt_id`, a non-empty string unique in the file. Other keys are ignored.
// Blank lines are errors too (the reference parses every line).
//
// Errors are kInvalidArgument with a message of the form
//   "<path>:<line>: field 'rubrics[3].points': expected a number, got string"
// Other messages after "<path>:<line>: ": "field 'prompt': missing", "field 'rubrics': empty
// list", "field 'prompt[2].role': the last turn must be 'user', got 'assistant'", "field
// 'rubrics[0].tags[1]': duplicate tag 'x'" (tags and example_tags must be unique: the reference
// asserts it), "field 'prompt_id': duplicate prompt_id 'x' (first on line N)", "expected a JSON
// object, got array", "blank line" (also for a whitespace-only line), "invalid JSON:
// <RapidJSON message> at offset N" (offset within the line; invalid UTF-8, NaN and Infinity
// are invalid). JSON type names are null, boolean, number, string, array, object.
// kNotFound / kPermissionDenied / kFailedPrecondition / kDataLoss come from reading the file
// (common/base/file.h).
//
// Details: lines split on '\n' only; a final newline is optional; an empty file gives an empty
// dataset. A repeated key in an object takes its last value (as Python's json.loads).
// RubricItem::points_text is the integer literal's value ("10", "-6"; "-0" -> "0") or, for a
// literal with a fraction or exponent, PythonFloatRepr ("5.0", "1e1" -> "10.0"); an integer
// literal beyond 64 bits prints as a float (Python would print the integer). The sha256 is of
// the bytes on disk. `ideal_completions_data` must be absent, null or an object; inside it,
// fields of the wrong type are ignored.

//
// A Professional file's records have instead: `id` (a non-empty string, or an integer written
// in decimal), playing the part of prompt_id; `conversation`, either the message list itself
// or an object whose `messages` is that list (same rules as `prompt`; fields named
// 'conversation.messages[i].role' or 'conversation[i].role'); `rubric_items`, a non-empty
// list of {criterion or criterion_text: string (criterion wins when both are present),
// points: number, tags: optional list of unique strings}; the slice fields `use_case`, `type`,
// `difficulty`, `specialty`, each optional, a string or null (Example::slices and
// example_tags "<field>:<value>"). Errors name these fields, e.g. "field
// 'rubric_items[2].criterion': missing (or criterion_text)".
absl::StatusOr<Dataset> LoadDataset(const std::string& path, const LoadOptions& options);

// The format of `path` as LoadDataset detects it (reads the file; errors as LoadDataset's read
// errors). `--professional` checks it before anything is sent.
absl::StatusOr<DatasetFormat> DetectDatasetFormat(const std::string& path);

// Parses one JSONL record (exposed for tests and for loaders of other files). `line` is used
// in error messages and stored in Example::line. Errors as for LoadDataset, without the
// uniqueness check.
absl::StatusOr<Example> ParseExample(const std::string& json, const std::string& path, int line,
                                     DatasetFormat format = DatasetFormat::kHealthBench);

// The reference's `--examples N` selection: CPython's random.Random(0).sample(range(n), k),
// returned as 0-based indices in sample order (not file order). When k >= n the reference does
// not sample at all: returns 0..n-1 in file order. `seed` must be a non-negative integer.
// Bit-exact with CPython 3.11 (MT19937 seeded by init_by_array of the seed's 32-bit words;
// see common/healthbench/python_random.h).
std::vector<size_t> SampleIndices(size_t n, size_t k, unsigned long seed = 0);

// Keeps the examples chosen by SampleIndices(examples.size(), k), in sample order, and
// rebuilds the index.
void SelectExamples(Dataset& dataset, size_t k);

// Keeps the examples for which `keep` is true, in file order, and rebuilds the index.
void KeepExamples(Dataset& dataset, const std::function<bool(const Example&)>& keep);

}  // namespace hb
