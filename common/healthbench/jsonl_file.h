// Internals shared by the JSONL loaders (dataset.cc, responses.cc, and the orchestrator's
// verdict files): reading a file with the
// sha256 of its stored bytes, splitting it into lines, and naming JSON types in error
// messages. Not part of the public contract; use dataset.h / responses.h.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"
#include "rapidjson/document.h"

namespace hb::jsonl_internal {

// The error of a blank (or whitespace-only) line. The reference parses every line of a JSONL
// file (SPEC §1), so it fails on one too: a blank line is never skipped, but the message says
// how to mend the file.
inline constexpr char kBlankLineError[] =
    "blank line (every line of a JSONL file must be one JSON object, as the reference reads "
    "it: delete the empty line)";

struct FileContents {
  // The decompressed text.
  std::string text;
  // sha256 hex of the bytes as stored on disk (compressed bytes for a gzip file).
  std::string sha256;
};

// Reads `path` (plain or gzip, detected by content). Errors are ReadFile's (common/base/file.h).
absl::StatusOr<FileContents> ReadWithSha256(const std::string& path);

// One line of a JSONL text, without its '\n'. `number` is 1-based.
struct Line {
  int number = 0;
  absl::string_view text;
};

// Splits `text` on '\n' like a line reader: a final '\n' does not start another line, so a
// missing trailing newline and a present one give the same lines. The views point into `text`.
std::vector<Line> SplitLines(absl::string_view text);

// True when `line` holds only JSON whitespace (space, tab, CR) or nothing.
bool IsBlank(absl::string_view line);

// Parses one line into `doc`. Returns "" on success, otherwise the error text
// "invalid JSON: <RapidJSON message> at offset N" (or kBlankLineError). Invalid UTF-8 is an
// error.
std::string ParseLine(absl::string_view line, rapidjson::Document& doc);

// Builds the kInvalidArgument errors of one record: "<path>:<line>: <message>" and
// "<path>:<line>: field '<field>': <what>". Holds a reference to `path`: keep it alive.
class RecordErrors {
 public:
  RecordErrors(const std::string& path, int line) : path_(path), line_(line) {}

  absl::Status Error(absl::string_view message) const;
  absl::Status Field(absl::string_view field, absl::string_view message) const;
  // "field '<field>': expected <expected>, got <JSON type of got>".
  absl::Status WrongType(absl::string_view field, absl::string_view expected,
                         const rapidjson::Value& got) const;
  absl::Status Missing(absl::string_view field) const { return Field(field, "missing"); }

 private:
  const std::string& path_;
  int line_;
};

// The string member `name` of `object`; errors name it `field`.
absl::StatusOr<std::string> RequireString(const rapidjson::Value& object, absl::string_view name,
                                          const std::string& field, const RecordErrors& errors);

// The member `name` of `record` as a list of {role: string, content: string} turns (possibly
// empty); errors name the member and the turn ("prompt[2].role"), or `field` instead of the
// member when given ("conversation.messages[2].role").
absl::StatusOr<std::vector<Message>> RequireMessages(const rapidjson::Value& record,
                                                     absl::string_view name,
                                                     const RecordErrors& errors,
                                                     absl::string_view field = "");

}  // namespace hb::jsonl_internal
