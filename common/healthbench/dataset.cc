#include "common/healthbench/dataset.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/jsonl_file.h"
#include "common/healthbench/python_random.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

using JsonValue = rapidjson::Value;

using jsonl_internal::RecordErrors;
using jsonl_internal::RequireString;

// A list of unique strings (tags).
absl::StatusOr<std::vector<std::string>> RequireTags(const JsonValue& object,
                                                     absl::string_view name,
                                                     const std::string& field,
                                                     const RecordErrors& errors) {
  const JsonValue* value = FindJsonMember(object, name);
  if (value == nullptr) return errors.Missing(field);
  if (!value->IsArray()) return errors.WrongType(field, "a list of strings", *value);
  std::vector<std::string> tags;
  tags.reserve(value->Size());
  absl::flat_hash_set<std::string> seen;
  for (rapidjson::SizeType i = 0; i < value->Size(); ++i) {
    const JsonValue& tag = (*value)[i];
    const std::string tag_field = absl::StrCat(field, "[", i, "]");
    if (!tag.IsString()) return errors.WrongType(tag_field, "a string", tag);
    std::string text = std::string(tag.GetString(), tag.GetStringLength());
    // The reference asserts that tags are unique (SPEC §2.1); fail here, not mid-run.
    if (!seen.insert(text).second) {
      return errors.Field(tag_field, absl::StrCat("duplicate tag '", text, "'"));
    }
    tags.push_back(std::move(text));
  }
  return tags;
}

absl::StatusOr<std::vector<Message>> ParsePrompt(const JsonValue& record,
                                                 const RecordErrors& errors) {
  HB_ASSIGN_OR_RETURN(std::vector<Message> messages,
                      jsonl_internal::RequireMessages(record, "prompt", errors));
  if (messages.empty()) return errors.Field("prompt", "empty list");
  if (messages.back().role != "user") {
    return errors.Field(
        absl::StrCat("prompt[", messages.size() - 1, "].role"),
        absl::StrCat("the last turn must be 'user', got '", messages.back().role, "'"));
  }
  return messages;
}

// How Python prints the parsed JSON number. RapidJSON stores a literal with a fraction or an
// exponent as a double and an integer literal as an (u)int64; an integer literal beyond
// 64 bits also becomes a double (and prints as a float: a documented deviation).
std::string PointsText(const JsonValue& points) {
  if (points.IsInt64()) return absl::StrCat(points.GetInt64());
  if (points.IsUint64()) return absl::StrCat(points.GetUint64());
  return PythonFloatRepr(points.GetDouble());
}

absl::StatusOr<std::vector<RubricItem>> ParseRubrics(const JsonValue& record,
                                                     const RecordErrors& errors) {
  const JsonValue* rubrics = FindJsonMember(record, "rubrics");
  if (rubrics == nullptr) return errors.Missing("rubrics");
  if (!rubrics->IsArray()) return errors.WrongType("rubrics", "a list of rubric items", *rubrics);
  if (rubrics->Empty()) return errors.Field("rubrics", "empty list");
  std::vector<RubricItem> items;
  items.reserve(rubrics->Size());
  for (rapidjson::SizeType i = 0; i < rubrics->Size(); ++i) {
    const JsonValue& entry = (*rubrics)[i];
    const std::string field = absl::StrCat("rubrics[", i, "]");
    if (!entry.IsObject()) return errors.WrongType(field, "an object", entry);
    RubricItem item;
    HB_ASSIGN_OR_RETURN(item.criterion,
                        RequireString(entry, "criterion", field + ".criterion", errors));
    const JsonValue* points = FindJsonMember(entry, "points");
    if (points == nullptr) return errors.Missing(field + ".points");
    if (!points->IsNumber()) return errors.WrongType(field + ".points", "a number", *points);
    item.points = points->GetDouble();
    item.points_text = PointsText(*points);
    HB_ASSIGN_OR_RETURN(item.tags, RequireTags(entry, "tags", field + ".tags", errors));
    items.push_back(std::move(item));
  }
  return items;
}

// Lenient: keeps whatever fields have the expected type (physician modes only read them).
absl::StatusOr<std::optional<IdealCompletions>> ParseIdealCompletions(const JsonValue& record,
                                                                      const RecordErrors& errors) {
  const JsonValue* data = FindJsonMember(record, "ideal_completions_data");
  if (data == nullptr || data->IsNull()) return std::optional<IdealCompletions>();
  if (!data->IsObject()) {
    return errors.WrongType("ideal_completions_data", "null or an object", *data);
  }
  IdealCompletions ideal;
  if (const JsonValue* v = FindJsonMember(*data, "ideal_completion");
      v != nullptr && v->IsString()) {
    ideal.ideal_completion = std::string(v->GetString(), v->GetStringLength());
  }
  if (const JsonValue* v = FindJsonMember(*data, "ideal_completions_group");
      v != nullptr && v->IsString()) {
    ideal.group = std::string(v->GetString(), v->GetStringLength());
  }
  if (const JsonValue* v = FindJsonMember(*data, "ideal_completions_ref_completions");
      v != nullptr && v->IsArray()) {
    for (const JsonValue& ref : v->GetArray()) {
      if (ref.IsString())
        ideal.ref_completions.push_back(std::string(ref.GetString(), ref.GetStringLength()));
    }
  }
  return std::optional<IdealCompletions>(std::move(ideal));
}

absl::StatusOr<Example> ParseRecord(const JsonValue& record, const RecordErrors& errors, int line) {
  if (!record.IsObject()) {
    return errors.Error(absl::StrCat("expected a JSON object, got ", JsonTypeName(record)));
  }
  Example example;
  example.line = line;
  HB_ASSIGN_OR_RETURN(example.prompt_id, RequireString(record, "prompt_id", "prompt_id", errors));
  if (example.prompt_id.empty()) return errors.Field("prompt_id", "empty string");
  HB_ASSIGN_OR_RETURN(example.prompt, ParsePrompt(record, errors));
  HB_ASSIGN_OR_RETURN(example.rubrics, ParseRubrics(record, errors));
  HB_ASSIGN_OR_RETURN(example.example_tags,
                      RequireTags(record, "example_tags", "example_tags", errors));
  HB_ASSIGN_OR_RETURN(example.ideal_completions, ParseIdealCompletions(record, errors));
  return example;
}

}  // namespace

const Example* Dataset::Find(const std::string& prompt_id) const {
  auto it = index.find(prompt_id);
  return it == index.end() ? nullptr : &examples[it->second];
}

absl::StatusOr<Example> ParseExample(const std::string& json, const std::string& path, int line) {
  RecordErrors errors(path, line);
  rapidjson::Document doc;
  std::string parse_error = jsonl_internal::ParseLine(json, doc);
  if (!parse_error.empty()) return errors.Error(parse_error);
  return ParseRecord(doc, errors, line);
}

absl::StatusOr<Dataset> LoadDataset(const std::string& path, const LoadOptions& options) {
  HB_ASSIGN_OR_RETURN(jsonl_internal::FileContents contents, jsonl_internal::ReadWithSha256(path));
  Dataset dataset;
  dataset.path = path;
  dataset.sha256 = std::move(contents.sha256);
  for (const jsonl_internal::Line& line : jsonl_internal::SplitLines(contents.text)) {
    absl::StatusOr<Example> example = ParseExample(std::string(line.text), path, line.number);
    if (example.ok()) {
      auto [it, inserted] = dataset.index.emplace(example->prompt_id, dataset.examples.size());
      if (!inserted) {
        example = absl::InvalidArgumentError(absl::StrCat(
            path, ":", line.number, ": field 'prompt_id': duplicate prompt_id '",
            example->prompt_id, "' (first on line ", dataset.examples[it->second].line, ")"));
      }
    }
    if (!example.ok()) {
      if (!options.skip_invalid) return example.status();
      dataset.skipped.push_back(SkippedLine{line.number, std::string(example.status().message())});
      continue;
    }
    dataset.examples.push_back(*std::move(example));
  }
  return dataset;
}

std::vector<size_t> SampleIndices(size_t n, size_t k, unsigned long seed) {
  std::vector<size_t> indices;
  if (k >= n) {
    // The reference samples only when num_examples < len(examples).
    indices.reserve(n);
    for (size_t i = 0; i < n; ++i) indices.push_back(i);
    return indices;
  }
  PythonRandom random(seed);
  for (uint64_t i : random.SampleRange(n, k)) indices.push_back(static_cast<size_t>(i));
  return indices;
}

namespace {

void RebuildIndex(Dataset& dataset) {
  dataset.index.clear();
  for (size_t i = 0; i < dataset.examples.size(); ++i) {
    dataset.index.emplace(dataset.examples[i].prompt_id, i);
  }
}

}  // namespace

void KeepExamples(Dataset& dataset, const std::function<bool(const Example&)>& keep) {
  std::vector<Example> kept;
  for (Example& example : dataset.examples) {
    if (keep(example)) kept.push_back(std::move(example));
  }
  dataset.examples = std::move(kept);
  RebuildIndex(dataset);
}

void SelectExamples(Dataset& dataset, size_t k) {
  std::vector<size_t> chosen = SampleIndices(dataset.examples.size(), k);
  std::vector<Example> selected;
  selected.reserve(chosen.size());
  for (size_t i : chosen) selected.push_back(std::move(dataset.examples[i]));
  dataset.examples = std::move(selected);
  RebuildIndex(dataset);
}

}  // namespace hb
