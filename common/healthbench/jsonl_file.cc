#include "common/healthbench/jsonl_file.h"

#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace hb::jsonl_internal {
namespace {

// The stored bytes, unchanged; nullopt-like failure reported through `ok`.
bool ReadRaw(const std::string& path, std::string& out) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return false;
  // Reserve the whole file up front: growing by doubling would peak at ~1.3x its size.
  struct stat st;
  if (::fstat(::fileno(file), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) out.append(buffer, n);
  bool ok = std::ferror(file) == 0;
  std::fclose(file);
  return ok;
}

}  // namespace

absl::StatusOr<FileContents> ReadWithSha256(const std::string& path) {
  FileContents contents;
  std::string raw;
  if (!ReadRaw(path, raw)) {
    // ReadFile produces the project's error codes and messages for the same failure.
    absl::StatusOr<std::string> again = ReadFile(path);
    if (!again.ok()) return again.status();
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  contents.sha256 = Sha256Hex(raw);
  const bool gzip = raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
                    static_cast<unsigned char>(raw[1]) == 0x8b;
  if (gzip) {
    // Decompression (and its kDataLoss errors) is ReadFile's job. The file is read twice, so
    // a file replaced in between could mismatch its hash; plain files are read once.
    absl::StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    contents.text = *std::move(text);
  } else {
    contents.text = std::move(raw);
  }
  return contents;
}

std::vector<Line> SplitLines(absl::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) end = text.size();
    lines.push_back(Line{++number, text.substr(start, end - start)});
    start = end + 1;
  }
  return lines;
}

bool IsBlank(absl::string_view line) {
  for (char c : line) {
    if (c != ' ' && c != '\t' && c != '\r') return false;
  }
  return true;
}

std::string ParseLine(absl::string_view line, rapidjson::Document& doc) {
  if (IsBlank(line)) return kBlankLineError;
  JsonParseOptions options;
  options.validate_utf8 = true;
  const absl::Status parsed = ParseJson(line, doc, options);
  if (!parsed.ok()) return absl::StrCat("invalid JSON: ", parsed.message());
  return "";
}

absl::Status RecordErrors::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(path_, ":", line_, ": ", message));
}

absl::Status RecordErrors::Field(absl::string_view field, absl::string_view message) const {
  return Error(absl::StrCat("field '", field, "': ", message));
}

absl::Status RecordErrors::WrongType(absl::string_view field, absl::string_view expected,
                                     const rapidjson::Value& got) const {
  return Error(JsonTypeError(field, expected, got).message());
}

absl::StatusOr<std::string> RequireString(const rapidjson::Value& object, absl::string_view name,
                                          const std::string& field, const RecordErrors& errors) {
  const rapidjson::Value* value = FindJsonMember(object, name);
  if (value == nullptr) return errors.Missing(field);
  if (!value->IsString()) return errors.WrongType(field, "a string", *value);
  return std::string(value->GetString(), value->GetStringLength());
}

absl::StatusOr<std::vector<Message>> RequireMessages(const rapidjson::Value& record,
                                                     absl::string_view name,
                                                     const RecordErrors& errors,
                                                     absl::string_view field_name) {
  const std::string list_field(field_name.empty() ? name : field_name);
  const rapidjson::Value* list = FindJsonMember(record, name);
  if (list == nullptr) return errors.Missing(list_field);
  if (!list->IsArray()) return errors.WrongType(list_field, "a list of messages", *list);
  std::vector<Message> messages;
  messages.reserve(list->Size());
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    const rapidjson::Value& turn = (*list)[i];
    const std::string field = absl::StrCat(list_field, "[", i, "]");
    if (!turn.IsObject()) return errors.WrongType(field, "an object", turn);
    Message message;
    HB_ASSIGN_OR_RETURN(message.role, RequireString(turn, "role", field + ".role", errors));
    HB_ASSIGN_OR_RETURN(message.content,
                        RequireString(turn, "content", field + ".content", errors));
    messages.push_back(std::move(message));
  }
  return messages;
}

}  // namespace hb::jsonl_internal
