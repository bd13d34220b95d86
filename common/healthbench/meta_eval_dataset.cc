#include "common/healthbench/meta_eval_dataset.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/jsonl_file.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

using jsonl_internal::RecordErrors;
using jsonl_internal::RequireString;
using JsonValue = rapidjson::Value;

// The member `name` as a list whose every entry passes `is_entry` (type name `entry_type`).
absl::StatusOr<const JsonValue*> RequireList(const JsonValue& record, absl::string_view name,
                                             absl::string_view list_type,
                                             absl::string_view entry_type,
                                             bool (JsonValue::*is_entry)() const,
                                             const RecordErrors& errors) {
  const JsonValue* list = FindJsonMember(record, name);
  if (list == nullptr) return errors.Missing(name);
  if (!list->IsArray()) return errors.WrongType(name, list_type, *list);
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    if (!((*list)[i].*is_entry)()) {
      return errors.WrongType(absl::StrCat(name, "[", i, "]"), entry_type, (*list)[i]);
    }
  }
  return list;
}

// An optional string member: "" when absent or null.
absl::StatusOr<std::string> OptionalString(const JsonValue& record, absl::string_view name,
                                           const RecordErrors& errors) {
  const JsonValue* value = FindJsonMember(record, name);
  if (value == nullptr || value->IsNull()) return std::string();
  return RequireString(record, name, std::string(name), errors);
}

absl::StatusOr<MetaEvalRow> ParseRow(const JsonValue& record, const RecordErrors& errors,
                                     int line) {
  if (!record.IsObject()) {
    return errors.Error(absl::StrCat("expected a JSON object, got ", JsonTypeName(record)));
  }
  MetaEvalRow row;
  row.line = line;
  HB_ASSIGN_OR_RETURN(row.prompt, jsonl_internal::RequireMessages(record, "prompt", errors));
  HB_ASSIGN_OR_RETURN(row.completion, RequireString(record, "completion", "completion", errors));
  HB_ASSIGN_OR_RETURN(row.rubric, RequireString(record, "rubric", "rubric", errors));
  HB_ASSIGN_OR_RETURN(row.category, RequireString(record, "category", "category", errors));

  HB_ASSIGN_OR_RETURN(const JsonValue* labels,
                      RequireList(record, "binary_labels", "a list of booleans", "a boolean",
                                  &JsonValue::IsBool, errors));
  if (labels->Empty()) return errors.Field("binary_labels", "empty list");
  for (const JsonValue& label : labels->GetArray()) row.binary_labels.push_back(label.GetBool());

  HB_ASSIGN_OR_RETURN(const JsonValue* ids,
                      RequireList(record, "anonymized_physician_ids", "a list of strings",
                                  "a string", &JsonValue::IsString, errors));
  if (ids->Size() != labels->Size()) {
    return errors.Field("anonymized_physician_ids",
                        absl::StrCat(ids->Size(), " ids for ", labels->Size(),
                                     " binary_labels (one id per label)"));
  }
  for (const JsonValue& id : ids->GetArray()) {
    row.physician_ids.emplace_back(id.GetString(), id.GetStringLength());
  }

  HB_ASSIGN_OR_RETURN(row.prompt_id, OptionalString(record, "prompt_id", errors));
  HB_ASSIGN_OR_RETURN(row.completion_id, OptionalString(record, "completion_id", errors));
  return row;
}

}  // namespace

absl::StatusOr<MetaEvalRow> ParseMetaEvalRow(absl::string_view json, const std::string& path,
                                             int line) {
  const RecordErrors errors(path, line);
  rapidjson::Document doc;
  if (std::string error = jsonl_internal::ParseLine(json, doc); !error.empty()) {
    return errors.Error(error);
  }
  return ParseRow(doc, errors, line);
}

absl::StatusOr<MetaEvalDataset> LoadMetaEvalDataset(const std::string& path) {
  HB_ASSIGN_OR_RETURN(jsonl_internal::FileContents contents, jsonl_internal::ReadWithSha256(path));
  MetaEvalDataset dataset;
  dataset.path = path;
  dataset.sha256 = std::move(contents.sha256);
  for (const jsonl_internal::Line& line : jsonl_internal::SplitLines(contents.text)) {
    HB_ASSIGN_OR_RETURN(MetaEvalRow row, ParseMetaEvalRow(line.text, path, line.number));
    dataset.rows.push_back(std::move(row));
  }
  return dataset;
}

void SelectMetaEvalRows(MetaEvalDataset& dataset, size_t k) {
  std::vector<MetaEvalRow> selected;
  for (const size_t i : SampleIndices(dataset.rows.size(), k)) {
    selected.push_back(std::move(dataset.rows[i]));
  }
  dataset.rows = std::move(selected);
}

}  // namespace hb
