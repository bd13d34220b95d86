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
#include "common/base/parallel.h"
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

// The message list `name` of `parent`, named `field` in errors ("prompt",
// "conversation.messages"): non-empty, ending with a user turn.
absl::StatusOr<std::vector<Message>> ParseMessages(const JsonValue& parent, absl::string_view name,
                                                   const std::string& field,
                                                   const RecordErrors& errors) {
  HB_ASSIGN_OR_RETURN(std::vector<Message> messages,
                      jsonl_internal::RequireMessages(parent, name, errors, field));
  if (messages.empty()) return errors.Field(field, "empty list");
  if (messages.back().role != "user") {
    return errors.Field(
        absl::StrCat(field, "[", messages.size() - 1, "].role"),
        absl::StrCat("the last turn must be 'user', got '", messages.back().role, "'"));
  }
  return messages;
}

// Professional's `conversation`: the message list, or an object holding it in `messages`.
absl::StatusOr<std::vector<Message>> ParseConversation(const JsonValue& record,
                                                       const RecordErrors& errors) {
  const JsonValue* conversation = FindJsonMember(record, "conversation");
  if (conversation != nullptr && conversation->IsObject()) {
    return ParseMessages(*conversation, "messages", "conversation.messages", errors);
  }
  return ParseMessages(record, "conversation", "conversation", errors);
}

// How Python prints the parsed JSON number. RapidJSON stores a literal with a fraction or an
// exponent as a double and an integer literal as an (u)int64; an integer literal beyond
// 64 bits also becomes a double (and prints as a float: a documented deviation).
std::string PointsText(const JsonValue& points) {
  if (points.IsInt64()) return absl::StrCat(points.GetInt64());
  if (points.IsUint64()) return absl::StrCat(points.GetUint64());
  return PythonFloatRepr(points.GetDouble());
}

// Where a format keeps its rubric: the list's key, the criterion's key(s), whether tags are
// required.
struct RubricLayout {
  absl::string_view list;
  absl::string_view criterion;
  absl::string_view criterion_alternative;  // empty: none
  bool tags_required;
};
constexpr RubricLayout kHealthBenchRubric = {"rubrics", "criterion", "", true};
constexpr RubricLayout kProfessionalRubric = {"rubric_items", "criterion", "criterion_text", false};

absl::StatusOr<std::string> ParseCriterion(const JsonValue& entry, const std::string& field,
                                           const RubricLayout& layout, const RecordErrors& errors) {
  const std::string name = absl::StrCat(field, ".", layout.criterion);
  if (layout.criterion_alternative.empty() || FindJsonMember(entry, layout.criterion) != nullptr) {
    return RequireString(entry, layout.criterion, name, errors);
  }
  if (FindJsonMember(entry, layout.criterion_alternative) == nullptr) {
    return errors.Field(name, absl::StrCat("missing (or ", layout.criterion_alternative, ")"));
  }
  return RequireString(entry, layout.criterion_alternative,
                       absl::StrCat(field, ".", layout.criterion_alternative), errors);
}

absl::StatusOr<RubricItem> ParseRubricItem(const JsonValue& entry, const std::string& field,
                                           const RubricLayout& layout, const RecordErrors& errors) {
  if (!entry.IsObject()) return errors.WrongType(field, "an object", entry);
  RubricItem item;
  HB_ASSIGN_OR_RETURN(item.criterion, ParseCriterion(entry, field, layout, errors));
  const JsonValue* points = FindJsonMember(entry, "points");
  if (points == nullptr) return errors.Missing(field + ".points");
  if (!points->IsNumber()) return errors.WrongType(field + ".points", "a number", *points);
  item.points = points->GetDouble();
  item.points_text = PointsText(*points);
  if (layout.tags_required || FindJsonMember(entry, "tags") != nullptr) {
    HB_ASSIGN_OR_RETURN(item.tags, RequireTags(entry, "tags", field + ".tags", errors));
  }
  return item;
}

absl::StatusOr<std::vector<RubricItem>> ParseRubrics(const JsonValue& record,
                                                     const RubricLayout& layout,
                                                     const RecordErrors& errors) {
  const std::string list_field(layout.list);
  const JsonValue* rubrics = FindJsonMember(record, layout.list);
  if (rubrics == nullptr) return errors.Missing(list_field);
  if (!rubrics->IsArray()) return errors.WrongType(list_field, "a list of rubric items", *rubrics);
  if (rubrics->Empty()) return errors.Field(list_field, "empty list");
  std::vector<RubricItem> items;
  items.reserve(rubrics->Size());
  for (rapidjson::SizeType i = 0; i < rubrics->Size(); ++i) {
    HB_ASSIGN_OR_RETURN(
        RubricItem item,
        ParseRubricItem((*rubrics)[i], absl::StrCat(list_field, "[", i, "]"), layout, errors));
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

absl::StatusOr<Example> ParseHealthBenchRecord(const JsonValue& record,
                                               const RecordErrors& errors) {
  Example example;
  HB_ASSIGN_OR_RETURN(example.prompt_id, RequireString(record, "prompt_id", "prompt_id", errors));
  if (example.prompt_id.empty()) return errors.Field("prompt_id", "empty string");
  HB_ASSIGN_OR_RETURN(example.prompt, ParseMessages(record, "prompt", "prompt", errors));
  HB_ASSIGN_OR_RETURN(example.rubrics, ParseRubrics(record, kHealthBenchRubric, errors));
  HB_ASSIGN_OR_RETURN(example.example_tags,
                      RequireTags(record, "example_tags", "example_tags", errors));
  HB_ASSIGN_OR_RETURN(example.ideal_completions, ParseIdealCompletions(record, errors));
  return example;
}

// Professional's `id`: a non-empty string, or an integer (kept as its decimal text).
absl::StatusOr<std::string> ParseProfessionalId(const JsonValue& record,
                                                const RecordErrors& errors) {
  const JsonValue* id = FindJsonMember(record, "id");
  if (id == nullptr) return errors.Missing("id");
  if (id->IsInt64()) return absl::StrCat(id->GetInt64());
  if (!id->IsString()) return errors.WrongType("id", "a string", *id);
  if (id->GetStringLength() == 0) return errors.Field("id", "empty string");
  return std::string(id->GetString(), id->GetStringLength());
}

absl::Status ParseSlices(const JsonValue& record, const RecordErrors& errors, Example& example) {
  for (const char* field : {"use_case", "type", "difficulty", "specialty"}) {
    const JsonValue* value = FindJsonMember(record, field);
    if (value == nullptr || value->IsNull()) continue;
    if (!value->IsString()) return errors.WrongType(field, "a string or null", *value);
    std::string text(value->GetString(), value->GetStringLength());
    example.example_tags.push_back(absl::StrCat(field, ":", text));
    example.slices.emplace_back(field, std::move(text));
  }
  return absl::OkStatus();
}

absl::StatusOr<Example> ParseProfessionalRecord(const JsonValue& record,
                                                const RecordErrors& errors) {
  Example example;
  HB_ASSIGN_OR_RETURN(example.prompt_id, ParseProfessionalId(record, errors));
  HB_ASSIGN_OR_RETURN(example.prompt, ParseConversation(record, errors));
  HB_ASSIGN_OR_RETURN(example.rubrics, ParseRubrics(record, kProfessionalRubric, errors));
  HB_RETURN_IF_ERROR(ParseSlices(record, errors, example));
  return example;
}

absl::StatusOr<Example> ParseRecord(const JsonValue& record, const RecordErrors& errors, int line,
                                    DatasetFormat format) {
  if (!record.IsObject()) {
    return errors.Error(absl::StrCat("expected a JSON object, got ", JsonTypeName(record)));
  }
  absl::StatusOr<Example> example = format == DatasetFormat::kProfessional
                                        ? ParseProfessionalRecord(record, errors)
                                        : ParseHealthBenchRecord(record, errors);
  if (example.ok()) example->line = line;
  return example;
}

// The file's format from its first line that is a JSON object.
DatasetFormat DetectFormat(const std::vector<jsonl_internal::Line>& lines) {
  for (const jsonl_internal::Line& line : lines) {
    rapidjson::Document doc;
    if (!jsonl_internal::ParseLine(std::string(line.text), doc).empty() || !doc.IsObject()) {
      continue;
    }
    return FindJsonMember(doc, "rubric_items") != nullptr ? DatasetFormat::kProfessional
                                                          : DatasetFormat::kHealthBench;
  }
  return DatasetFormat::kHealthBench;
}

}  // namespace

const Example* Dataset::Find(const std::string& prompt_id) const {
  auto it = index.find(prompt_id);
  return it == index.end() ? nullptr : &examples[it->second];
}

const char* DatasetFormatName(DatasetFormat format) {
  return format == DatasetFormat::kProfessional ? "professional" : "healthbench";
}

absl::StatusOr<Example> ParseExample(const std::string& json, const std::string& path, int line,
                                     DatasetFormat format) {
  RecordErrors errors(path, line);
  rapidjson::Document doc;
  std::string parse_error = jsonl_internal::ParseLine(json, doc);
  if (!parse_error.empty()) return errors.Error(parse_error);
  return ParseRecord(doc, errors, line, format);
}

absl::StatusOr<DatasetFormat> DetectDatasetFormat(const std::string& path) {
  HB_ASSIGN_OR_RETURN(jsonl_internal::FileContents contents, jsonl_internal::ReadWithSha256(path));
  return DetectFormat(jsonl_internal::SplitLines(contents.text));
}

absl::StatusOr<Dataset> LoadDataset(const std::string& path, const LoadOptions& options) {
  HB_ASSIGN_OR_RETURN(jsonl_internal::FileContents contents, jsonl_internal::ReadWithSha256(path));
  Dataset dataset;
  dataset.path = path;
  dataset.sha256 = std::move(contents.sha256);
  const std::vector<jsonl_internal::Line> lines = jsonl_internal::SplitLines(contents.text);
  dataset.format = DetectFormat(lines);
  // Parsing is most of a large run's start-up: the lines are parsed on every core, then taken
  // in file order (duplicates and the first error found exactly as one pass would).
  std::vector<absl::StatusOr<Example>> parsed(lines.size(), absl::UnknownError("not parsed"));
  ParallelFor(lines.size(), 128, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      parsed[i] = ParseExample(std::string(lines[i].text), path, lines[i].number, dataset.format);
    }
  });
  for (size_t i = 0; i < lines.size(); ++i) {
    const jsonl_internal::Line& line = lines[i];
    absl::StatusOr<Example> example = std::move(parsed[i]);
    if (example.ok()) {
      auto [it, inserted] = dataset.index.emplace(example->prompt_id, dataset.examples.size());
      if (!inserted) {
        const char* id = dataset.format == DatasetFormat::kProfessional ? "id" : "prompt_id";
        example = absl::InvalidArgumentError(absl::StrCat(
            path, ":", line.number, ": field '", id, "': duplicate ", id, " '", example->prompt_id,
            "' (first on line ", dataset.examples[it->second].line, ")"));
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
