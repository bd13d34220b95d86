#include "orchestrator/report/verdict_file.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_context.h"
#include "common/healthbench/jsonl_file.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb {
namespace {

// Parses one JSONL file line by line; `parse_row` fills the row-specific fields of one object.
// Shared by verdicts and failures so both report identical errors.
class RowFileReader {
 public:
  RowFileReader(const std::string& path, const Dataset& dataset) : path_(path), dataset_(dataset) {}

  absl::Status Error(int line, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ":", line, ": ", what));
  }

  // `status` (a json_io reader error) with this file's "<path>:<line>: " in front.
  absl::Status At(int line, const absl::Status& status) const {
    return WithMessagePrefix(status, absl::StrCat(path_, ":", line, ": "));
  }

  absl::StatusOr<const rapidjson::Value*> Field(const rapidjson::Value& object, int line,
                                                const char* name) const {
    absl::StatusOr<const rapidjson::Value*> field = RequireJsonMember(object, name);
    if (!field.ok()) return At(line, field.status());
    return field;
  }

  absl::Status TypeError(int line, const char* name, const char* expected,
                         const rapidjson::Value& got) const {
    return At(line, JsonTypeError(name, expected, got));
  }

  absl::StatusOr<std::string> String(const rapidjson::Value& object, int line,
                                     const char* name) const {
    absl::StatusOr<std::string> value = JsonStringMember(object, name);
    if (!value.ok()) return At(line, value.status());
    return value;
  }

  absl::StatusOr<int64_t> OptionalInt(const rapidjson::Value& object, int line, const char* name,
                                      int64_t fallback) const {
    const rapidjson::Value* field = FindJsonMember(object, name);
    if (field == nullptr) return fallback;
    absl::StatusOr<int64_t> value = JsonInt(*field, name);
    if (!value.ok()) return At(line, value.status());
    return value;
  }

  absl::StatusOr<bool> OptionalBool(const rapidjson::Value& object, int line, const char* name,
                                    bool fallback) const {
    const rapidjson::Value* field = FindJsonMember(object, name);
    if (field == nullptr) return fallback;
    if (!field->IsBool()) return TypeError(line, name, "a boolean", *field);
    return field->GetBool();
  }

  // Validates prompt_id and rubric_index against the dataset and checks for duplicates.
  absl::Status Key(const rapidjson::Value& object, int line, std::string& prompt_id,
                   int& rubric_index) {
    auto id = String(object, line, "prompt_id");
    if (!id.ok()) return id.status();
    auto index_field = Field(object, line, "rubric_index");
    if (!index_field.ok()) return index_field.status();
    const rapidjson::Value& index = **index_field;
    if (!index.IsInt64()) return TypeError(line, "rubric_index", "an integer", index);
    const Example* example = dataset_.Find(*id);
    if (example == nullptr) return Error(line, absl::StrCat("unknown prompt_id '", *id, "'"));
    int64_t value = index.GetInt64();
    if (value < 0 || value >= static_cast<int64_t>(example->rubrics.size())) {
      return Error(line, absl::StrCat("rubric_index ", value, " out of range for prompt_id '", *id,
                                      "' (", example->rubrics.size(), " rubric items)"));
    }
    auto [it, inserted] = seen_.try_emplace(std::make_pair(*id, static_cast<int>(value)), line);
    if (!inserted) {
      return Error(line, absl::StrCat("duplicate row for prompt_id '", *id, "' rubric_index ",
                                      value, " (first on line ", it->second, ")"));
    }
    prompt_id = *std::move(id);
    rubric_index = static_cast<int>(value);
    return absl::OkStatus();
  }

  // Calls `parse_row(object, line)` for each non-blank line.
  template <typename ParseRow>
  absl::Status ForEachLine(ParseRow parse_row) {
    absl::StatusOr<std::string> contents = ReadFile(path_);
    if (!contents.ok()) return contents.status();
    for (const jsonl_internal::Line& text : jsonl_internal::SplitLines(*contents)) {
      const int line = text.number;
      if (jsonl_internal::IsBlank(text.text)) continue;
      rapidjson::Document doc;
      if (std::string error = jsonl_internal::ParseLine(text.text, doc); !error.empty()) {
        return Error(line, error);
      }
      if (!doc.IsObject()) {
        return Error(line, absl::StrCat("expected a JSON object, got ", JsonTypeName(doc)));
      }
      absl::Status status = parse_row(static_cast<const rapidjson::Value&>(doc), line);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }

 private:
  std::string path_;
  const Dataset& dataset_;
  absl::flat_hash_map<std::pair<std::string, int>, int> seen_;
};

}  // namespace

namespace {

constexpr char kHeaderKey[] = "verdicts_header";

absl::StatusOr<VerdictsHeader> ParseHeader(const RowFileReader& reader,
                                           const rapidjson::Value& object, int line) {
  const rapidjson::Value& fields = *FindJsonMember(object, kHeaderKey);
  if (!fields.IsObject()) return reader.TypeError(line, kHeaderKey, "an object", fields);
  VerdictsHeader header;
  const std::pair<const char*, std::string*> named[] = {
      {"checkpoint", &header.checkpoint},
      {"responses_sha256", &header.responses_sha256},
      {"dataset_sha256", &header.dataset_sha256},
      {"grader_template_sha256", &header.grader_template_sha256}};
  for (const auto& [name, value] : named) {
    const std::string field = absl::StrCat(kHeaderKey, ".", name);
    const rapidjson::Value* member = FindJsonMember(fields, name);
    if (member == nullptr) {
      if (value == &header.grader_template_sha256) continue;  // optional
      return reader.Error(line, absl::StrCat("field '", field, "': missing"));
    }
    absl::StatusOr<std::string> text = JsonString(*member, field);
    if (!text.ok()) return reader.At(line, text.status());
    *value = *std::move(text);
  }
  return header;
}

}  // namespace

absl::StatusOr<std::vector<VerdictRow>> LoadVerdicts(const std::string& path,
                                                     const Dataset& dataset) {
  absl::StatusOr<VerdictFile> file = ReadVerdictFile(path, dataset);
  if (!file.ok()) return file.status();
  return std::move(file->rows);
}

absl::StatusOr<VerdictFile> ReadVerdictFile(const std::string& path, const Dataset& dataset) {
  RowFileReader reader(path, dataset);
  VerdictFile file;
  std::vector<VerdictRow>& rows = file.rows;
  bool first = true;
  absl::Status status =
      reader.ForEachLine([&](const rapidjson::Value& object, int line) -> absl::Status {
        const bool first_line = first;
        first = false;
        if (FindJsonMember(object, kHeaderKey) != nullptr) {
          if (!first_line) {
            return reader.Error(line, "a verdicts_header may only be the first line");
          }
          absl::StatusOr<VerdictsHeader> header = ParseHeader(reader, object, line);
          if (!header.ok()) return header.status();
          file.header = *std::move(header);
          return absl::OkStatus();
        }
        VerdictRow row;
        absl::Status key = reader.Key(object, line, row.prompt_id, row.rubric_index);
        if (!key.ok()) return key;
        auto met = reader.Field(object, line, "criteria_met");
        if (!met.ok()) return met.status();
        if (!(*met)->IsBool()) return reader.TypeError(line, "criteria_met", "a boolean", **met);
        row.criteria_met = (*met)->GetBool();
        auto explanation = reader.String(object, line, "explanation");
        if (!explanation.ok()) return explanation.status();
        row.explanation = *std::move(explanation);
        auto attempts = reader.OptionalInt(object, line, "attempts", 1);
        if (!attempts.ok()) return attempts.status();
        row.attempts = static_cast<int>(*attempts);
        auto prompt_tokens = reader.OptionalInt(object, line, "prompt_tokens", 0);
        if (!prompt_tokens.ok()) return prompt_tokens.status();
        row.prompt_tokens = *prompt_tokens;
        auto cached_tokens = reader.OptionalInt(object, line, "cached_tokens", 0);
        if (!cached_tokens.ok()) return cached_tokens.status();
        row.cached_tokens = *cached_tokens;
        auto completion_tokens = reader.OptionalInt(object, line, "completion_tokens", 0);
        if (!completion_tokens.ok()) return completion_tokens.status();
        row.completion_tokens = *completion_tokens;
        auto from_cache = reader.OptionalBool(object, line, "from_cache", false);
        if (!from_cache.ok()) return from_cache.status();
        row.from_cache = *from_cache;
        auto batch = reader.OptionalBool(object, line, "batch", false);
        if (!batch.ok()) return batch.status();
        row.batch = *batch;
        rows.push_back(std::move(row));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return file;
}

absl::Status CheckVerdictsHeader(const std::string& path,
                                 const std::optional<VerdictsHeader>& header,
                                 const std::string& responses_path,
                                 const std::string& responses_sha256,
                                 const std::string& dataset_sha256) {
  if (!header.has_value()) return absl::OkStatus();
  if (header->responses_sha256 != responses_sha256) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " grades responses with sha256 ", header->responses_sha256, " (checkpoint '",
        header->checkpoint, "'), but ", responses_path, " has sha256 ", responses_sha256,
        ": pass the responses file that run graded (its summary.json names it under "
        "provenance.responses), or grade these responses"));
  }
  if (header->dataset_sha256 != dataset_sha256) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " grades the dataset with sha256 ", header->dataset_sha256, " (checkpoint '",
        header->checkpoint, "'), but the dataset given has sha256 ", dataset_sha256,
        ": pass the dataset that run graded (its summary.json names it under "
        "provenance.dataset)"));
  }
  return absl::OkStatus();
}

std::string MissingVerdictsHeaderWarning(const std::string& path) {
  return absl::StrCat("warning: ", path,
                      " has no verdicts_header line (written before verdict files named their "
                      "responses): cannot check that it grades these responses");
}

std::string FormatVerdictsHeader(const VerdictsHeader& header) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key(kHeaderKey);
  writer.StartObject();
  writer.Key("checkpoint");
  WriteJsonString(writer, header.checkpoint);
  writer.Key("responses_sha256");
  WriteJsonString(writer, header.responses_sha256);
  writer.Key("dataset_sha256");
  WriteJsonString(writer, header.dataset_sha256);
  writer.Key("grader_template_sha256");
  WriteJsonString(writer, header.grader_template_sha256);
  writer.EndObject();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

absl::StatusOr<std::vector<RowFailure>> LoadFailures(const std::string& path,
                                                     const Dataset& dataset) {
  RowFileReader reader(path, dataset);
  std::vector<RowFailure> rows;
  absl::Status status =
      reader.ForEachLine([&](const rapidjson::Value& object, int line) -> absl::Status {
        RowFailure row;
        absl::Status key = reader.Key(object, line, row.prompt_id, row.rubric_index);
        if (!key.ok()) return key;
        auto reason = reader.String(object, line, "reason");
        if (!reason.ok()) return reason.status();
        row.reason = *std::move(reason);
        rows.push_back(std::move(row));
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return rows;
}

std::string FormatVerdictLine(const VerdictRow& row) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key("prompt_id");
  WriteJsonString(writer, row.prompt_id);
  writer.Key("rubric_index");
  writer.Int(row.rubric_index);
  writer.Key("criteria_met");
  writer.Bool(row.criteria_met);
  writer.Key("explanation");
  WriteJsonString(writer, row.explanation);
  writer.Key("attempts");
  writer.Int(row.attempts);
  writer.Key("prompt_tokens");
  writer.Int64(row.prompt_tokens);
  writer.Key("cached_tokens");
  writer.Int64(row.cached_tokens);
  writer.Key("completion_tokens");
  writer.Int64(row.completion_tokens);
  writer.Key("from_cache");
  writer.Bool(row.from_cache);
  writer.Key("batch");
  writer.Bool(row.batch);
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string FormatFailureLine(const RowFailure& failure) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  writer.Key("prompt_id");
  WriteJsonString(writer, failure.prompt_id);
  writer.Key("rubric_index");
  writer.Int(failure.rubric_index);
  writer.Key("reason");
  WriteJsonString(writer, failure.reason);
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace hb
