#include "orchestrator/commands/summary_file.h"

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "common/healthbench/jsonl_file.h"
#include "grader/grader_identity.h"
#include "rapidjson/document.h"

namespace hb::commands_internal {
namespace {

class SummaryReader {
 public:
  explicit SummaryReader(std::string path) : path_(std::move(path)) {}

  absl::Status Parse(const std::string& text) {
    JsonParseOptions options;
    options.full_precision = true;
    if (absl::Status parsed = ParseJson(text, doc_, options); !parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": invalid JSON: ", parsed.message()));
    }
    if (!doc_.IsObject()) return absl::InvalidArgumentError(absl::StrCat(path_, ": not an object"));
    return absl::OkStatus();
  }

  // The value at a dotted path such as "provenance.dataset.sha256".
  absl::StatusOr<const rapidjson::Value*> Get(const std::string& dotted) const {
    const rapidjson::Value* value = &doc_;
    for (absl::string_view part : absl::StrSplit(dotted, '.')) {
      if (!value->IsObject()) return Missing(dotted);
      auto it = value->FindMember(
          rapidjson::Value(part.data(), static_cast<rapidjson::SizeType>(part.size())));
      if (it == value->MemberEnd()) return Missing(dotted);
      value = &it->value;
    }
    return value;
  }

  absl::StatusOr<std::string> String(const std::string& dotted) const {
    return Read(dotted, JsonString);
  }
  absl::StatusOr<int64_t> Int(const std::string& dotted) const { return Read(dotted, JsonInt); }
  absl::StatusOr<double> Double(const std::string& dotted) const {
    return Read(dotted, JsonDouble);
  }
  absl::StatusOr<bool> Bool(const std::string& dotted) const { return Read(dotted, JsonBool); }

  // Fields added later: the value when present, `fallback` when absent; a wrong type is
  // still an error.
  absl::StatusOr<std::string> OptionalString(const std::string& dotted,
                                             std::string fallback = "") const {
    if (!Get(dotted).ok()) return fallback;
    return String(dotted);
  }
  absl::StatusOr<int64_t> OptionalInt(const std::string& dotted, int64_t fallback) const {
    if (!Get(dotted).ok()) return fallback;
    return Int(dotted);
  }
  absl::StatusOr<std::vector<std::string>> OptionalStrings(const std::string& dotted) const {
    std::vector<std::string> out;
    absl::StatusOr<const rapidjson::Value*> value = Get(dotted);
    if (!value.ok()) return out;
    if (!(*value)->IsArray()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": field '", dotted, "': expected an array of strings"));
    }
    for (const rapidjson::Value& item : (*value)->GetArray()) {
      HB_ASSIGN_OR_RETURN(std::string text, JsonString(item, dotted));
      out.push_back(std::move(text));
    }
    return out;
  }

 private:
  absl::Status Missing(const std::string& dotted) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": field '", dotted, "': missing"));
  }
  // The value at `dotted` read by a json_io typed reader, its error prefixed with the path.
  template <typename T>
  absl::StatusOr<T> Read(const std::string& dotted,
                         absl::StatusOr<T> (*read)(const rapidjson::Value&,
                                                   absl::string_view)) const {
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* value, Get(dotted));
    absl::StatusOr<T> typed = read(*value, dotted);
    if (!typed.ok()) return WithMessagePrefix(typed.status(), absl::StrCat(path_, ": "));
    return typed;
  }

  std::string path_;
  rapidjson::Document doc_;
};

// The grader fields summaries gained later, each absent in older ones (the default then): api,
// reasoning_effort (null when not sent), extra_body (null or an object), headers (name and
// value_sha256 each; the value itself is never recorded).
absl::Status ReadLaterGraderFields(const std::string& path, const SummaryReader& reader,
                                   GraderSettings& grader) {
  const std::string prefix = absl::StrCat(path, ": ");
  HB_ASSIGN_OR_RETURN(const std::string api,
                      reader.OptionalString("provenance.grader.api", "chat"));
  grader.api = api == GraderApiName(GraderApi::kResponses) ? GraderApi::kResponses
                                                           : GraderApi::kChatCompletions;
  if (absl::StatusOr<const rapidjson::Value*> effort =
          reader.Get("provenance.grader.reasoning_effort");
      effort.ok() && !(*effort)->IsNull()) {
    HB_ASSIGN_OR_RETURN(grader.reasoning_effort,
                        reader.String("provenance.grader.reasoning_effort"));
  }
  if (absl::StatusOr<const rapidjson::Value*> extra = reader.Get("provenance.grader.extra_body");
      extra.ok() && !(*extra)->IsNull()) {
    if (!(*extra)->IsObject()) {
      return WithMessagePrefix(
          JsonTypeError("provenance.grader.extra_body", "an object or null", **extra), prefix);
    }
    grader.extra_body = WriteJson([&](JsonWriter& writer) { (*extra)->Accept(writer); });
  }
  absl::StatusOr<const rapidjson::Value*> headers = reader.Get("provenance.grader.headers");
  if (!headers.ok()) return absl::OkStatus();
  if (!(*headers)->IsArray()) {
    return WithMessagePrefix(JsonTypeError("provenance.grader.headers", "an array", **headers),
                             prefix);
  }
  for (const rapidjson::Value& header : (*headers)->GetArray()) {
    if (!header.IsObject()) {
      return WithMessagePrefix(JsonTypeError("provenance.grader.headers[]", "an object", header),
                               prefix);
    }
    absl::StatusOr<std::string> name = JsonStringMember(header, "name");
    absl::StatusOr<std::string> sha = JsonStringMember(header, "value_sha256");
    if (!name.ok() || !sha.ok()) {
      return WithMessagePrefix(name.ok() ? sha.status() : name.status(),
                               absl::StrCat(prefix, "provenance.grader.headers[]: "));
    }
    grader.headers.push_back(GraderHeader{*std::move(name), "", *std::move(sha)});
  }
  return absl::OkStatus();
}

// Rebuilds the metrics from the reference's map: "k", "k:n_samples", "k:bootstrap_std" per key,
// with "score" itself absent (it is the top line).
absl::StatusOr<std::vector<MetricSummary>> ReadMetrics(const SummaryReader& reader, double score) {
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* map, reader.Get("metrics"));
  std::vector<MetricSummary> metrics;
  if (!map->IsObject()) return metrics;
  auto find = [&](const std::string& name) -> MetricSummary& {
    for (MetricSummary& m : metrics) {
      if (m.name == name) return m;
    }
    metrics.push_back(MetricSummary{name, name == "score" ? score : 0.0, 0, 0.0});
    return metrics.back();
  };
  for (auto it = map->MemberBegin(); it != map->MemberEnd(); ++it) {
    const std::string key(it->name.GetString(), it->name.GetStringLength());
    const double value =
        it->value.IsNumber() ? it->value.GetDouble() : std::numeric_limits<double>::quiet_NaN();
    if (absl::EndsWith(key, ":n_samples")) {
      find(key.substr(0, key.size() - 10)).n_samples = static_cast<int64_t>(value);
    } else if (absl::EndsWith(key, ":bootstrap_std")) {
      find(key.substr(0, key.size() - 14)).bootstrap_std = value;
    } else {
      find(key).mean = value;
    }
  }
  return metrics;
}

// "skipped_unscorable_tasks" (absent in summaries written before it existed).
std::vector<UnscorableTask> ReadUnscorableTasks(const SummaryReader& reader) {
  std::vector<UnscorableTask> tasks;
  absl::StatusOr<const rapidjson::Value*> list = reader.Get("skipped_unscorable_tasks");
  if (!list.ok() || !(*list)->IsArray()) return tasks;
  for (const rapidjson::Value& entry : (*list)->GetArray()) {
    const rapidjson::Value* id = entry.IsObject() ? FindJsonMember(entry, "prompt_id") : nullptr;
    if (id == nullptr || !id->IsString()) continue;
    UnscorableTask task;
    task.prompt_id.assign(id->GetString(), id->GetStringLength());
    if (const rapidjson::Value* line = FindJsonMember(entry, "line"); line && line->IsInt()) {
      task.line = line->GetInt();
    }
    const rapidjson::Value* reason = FindJsonMember(entry, "reason");
    task.reason = reason != nullptr && reason->IsString() ? reason->GetString() : kUnscorableReason;
    tasks.push_back(std::move(task));
  }
  return tasks;
}

// provenance: the dataset, subset, selection, responses and grader template.
absl::Status ReadInputs(const SummaryReader& reader, CheckpointSummary& p) {
  HB_ASSIGN_OR_RETURN(p.dataset_path, reader.String("provenance.dataset.path"));
  HB_ASSIGN_OR_RETURN(p.dataset_sha256, reader.String("provenance.dataset.sha256"));
  // Absent in summaries written before subsets existed.
  if (absl::StatusOr<std::string> subset = reader.String("provenance.subset"); subset.ok()) {
    p.subset = *std::move(subset);
  }
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* examples, reader.Get("provenance.examples"));
  if (!examples->IsNull()) {
    HB_ASSIGN_OR_RETURN(p.examples, reader.Int("provenance.examples"));
  }
  HB_ASSIGN_OR_RETURN(p.responses_path, reader.String("provenance.responses.path"));
  HB_ASSIGN_OR_RETURN(p.responses_sha256, reader.String("provenance.responses.sha256"));
  HB_ASSIGN_OR_RETURN(p.template_sha256, reader.String("provenance.grader_template_sha256"));
  return absl::OkStatus();
}

// provenance: the grader (what its API sends), the length adjustment and the endpoint.
absl::Status ReadGrader(const std::string& path, const SummaryReader& reader,
                        CheckpointSummary& p) {
  HB_ASSIGN_OR_RETURN(p.grader.model, reader.String("provenance.grader.model"));
  HB_RETURN_IF_ERROR(ReadLaterGraderFields(path, reader, p.grader));
  // Only what the grader's API sends is recorded (SentOnApi): a Responses grader's summary has
  // no temperature, max_tokens or system message, which stay at their defaults.
  if (SentOnApi(p.grader.api, "temperature")) {
    HB_ASSIGN_OR_RETURN(p.grader.temperature, reader.Double("provenance.grader.temperature"));
  }
  if (SentOnApi(p.grader.api, "max_tokens")) {
    HB_ASSIGN_OR_RETURN(int64_t max_tokens, reader.Int("provenance.grader.max_tokens"));
    p.grader.max_tokens = static_cast<int>(max_tokens);
  }
  if (SentOnApi(p.grader.api, "system_message")) {
    HB_ASSIGN_OR_RETURN(p.grader.system_message, reader.String("provenance.grader.system_message"));
  }
  if (absl::StatusOr<const rapidjson::Value*> adjustment =
          reader.Get("provenance.length_adjustment");
      adjustment.ok() && !(*adjustment)->IsNull()) {
    LengthAdjustment read;
    HB_ASSIGN_OR_RETURN(read.center, reader.Double("provenance.length_adjustment.center"));
    HB_ASSIGN_OR_RETURN(read.penalty_per_500_chars,
                        reader.Double("provenance.length_adjustment.penalty_per_500_chars"));
    p.length_adjustment = read;
  }
  HB_ASSIGN_OR_RETURN(p.grader_endpoint, reader.String("provenance.grader_endpoint"));
  HB_ASSIGN_OR_RETURN(p.grader_upstream,
                      reader.OptionalString("provenance.grader.upstream_base_url"));
  HB_ASSIGN_OR_RETURN(p.grader_version, reader.OptionalString("provenance.grader.version"));
  HB_ASSIGN_OR_RETURN(p.grader_replicas, reader.OptionalStrings("provenance.grader.replicas"));
  return absl::OkStatus();
}

// provenance: sharding, seed, checkpoint index, simulated, incomplete, unscorable tasks.
absl::Status ReadRunFacts(const std::string& path, const SummaryReader& reader,
                          CheckpointSummary& p) {
  // provenance.shard is null when no shard was recorded (`score`, `merge`): Get fails on it.
  HB_ASSIGN_OR_RETURN(const int64_t shard_index, reader.OptionalInt("provenance.shard.index", 0));
  HB_ASSIGN_OR_RETURN(const int64_t shard_count, reader.OptionalInt("provenance.shard.count", 0));
  p.shard_index = static_cast<int>(shard_index);
  p.shard_count = static_cast<int>(shard_count);
  HB_ASSIGN_OR_RETURN(int64_t seed, reader.Int("provenance.seed"));
  if (seed < 0 || seed > 0xFFFFFFFFLL) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field 'provenance.seed': ", seed, " does not fit in 32 bits"));
  }
  p.seed = static_cast<uint32_t>(seed);
  HB_ASSIGN_OR_RETURN(int64_t index, reader.Int("provenance.checkpoint_index"));
  p.checkpoint_index = static_cast<int>(index);
  HB_ASSIGN_OR_RETURN(p.simulated, reader.Bool("provenance.simulated"));
  if (absl::StatusOr<const rapidjson::Value*> reason = reader.Get("provenance.simulated_reason");
      reason.ok() && (*reason)->IsString()) {
    p.simulated_reason = (*reason)->GetString();
  }
  HB_ASSIGN_OR_RETURN(p.incomplete, reader.Bool("provenance.incomplete"));
  p.unscorable_tasks = ReadUnscorableTasks(reader);
  return absl::OkStatus();
}

// The score (the reference's raw score), the counts and the metrics.
absl::Status ReadScore(const SummaryReader& reader, CheckpointSummary& p) {
  // "raw_score" is the reference's score; "score" is the length-adjusted one when there is one
  // (summaries written before raw_score existed have the raw score there).
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* score, reader.Get("score"));
  if (absl::StatusOr<const rapidjson::Value*> raw = reader.Get("raw_score"); raw.ok()) {
    score = *raw;
  }
  p.score = score->IsNumber() ? score->GetDouble() : std::numeric_limits<double>::quiet_NaN();
  HB_ASSIGN_OR_RETURN(p.tasks, reader.Int("counts.tasks"));
  HB_ASSIGN_OR_RETURN(p.graded, reader.Int("counts.graded"));
  HB_ASSIGN_OR_RETURN(p.not_graded, reader.Int("counts.not_graded"));
  HB_ASSIGN_OR_RETURN(p.metrics, ReadMetrics(reader, p.score));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckpointSummary> ReadCheckpointSummary(const std::string& dir) {
  const std::string path = dir + "/summary.json";
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SummaryReader reader(path);
  HB_RETURN_IF_ERROR(reader.Parse(text));
  CheckpointSummary p;
  p.dir = dir;
  HB_ASSIGN_OR_RETURN(p.checkpoint, reader.String("checkpoint"));
  HB_RETURN_IF_ERROR(ReadInputs(reader, p));
  HB_RETURN_IF_ERROR(ReadGrader(path, reader, p));
  HB_RETURN_IF_ERROR(ReadRunFacts(path, reader, p));
  HB_RETURN_IF_ERROR(ReadScore(reader, p));
  return p;
}

namespace {

// "center C, penalty P per 500 chars", or "none".
std::string LengthAdjustmentText(const std::optional<LengthAdjustment>& adjustment) {
  if (!adjustment.has_value()) return "none";
  return absl::StrCat("center ", PythonFloatRepr(adjustment->center), ", penalty ",
                      PythonFloatRepr(adjustment->penalty_per_500_chars), " per 500 chars");
}

std::string Differs(const char* name, const std::string& x, const std::string& y) {
  return x == y ? std::string() : absl::StrCat(name, " ('", x, "' vs '", y, "')");
}

std::string FirstOf(std::initializer_list<std::string> differences) {
  for (const std::string& d : differences) {
    if (!d.empty()) return d;
  }
  return "";
}

}  // namespace

std::string GradingDisagreement(const CheckpointSummary& a, const CheckpointSummary& b) {
  if (std::string dataset = Differs("dataset sha256", a.dataset_sha256, b.dataset_sha256);
      !dataset.empty()) {
    return dataset;
  }
  // What the grader grades with: the one identity (grader/grader_identity.h), both ways.
  const std::optional<IdentityDifference> d = FirstIdentityDifference(
      GraderIdentity{a.grader, a.template_sha256}, GraderIdentity{b.grader, b.template_sha256});
  if (!d.has_value()) return "";
  return Differs(("grader " + d->name).c_str(), d->a_value, d->b_value);
}

std::string ShardDisagreement(const CheckpointSummary& a, const CheckpointSummary& b,
                              bool compare_responses) {
  return FirstOf({Differs("checkpoint name", a.checkpoint, b.checkpoint),
                  Differs("examples", absl::StrCat(a.examples), absl::StrCat(b.examples)),
                  compare_responses
                      ? Differs("responses sha256", a.responses_sha256, b.responses_sha256)
                      : std::string(),
                  GradingDisagreement(a, b),
                  Differs("length adjustment", LengthAdjustmentText(a.length_adjustment),
                          LengthAdjustmentText(b.length_adjustment)),
                  Differs("seed", absl::StrCat(a.seed), absl::StrCat(b.seed)),
                  Differs("checkpoint index", absl::StrCat(a.checkpoint_index),
                          absl::StrCat(b.checkpoint_index))});
}

absl::StatusOr<TaskScores> ReadTaskScores(const std::string& dir) {
  const std::string path = dir + "/tasks.jsonl";
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  TaskScores out;
  for (const jsonl_internal::Line& line : jsonl_internal::SplitLines(text)) {
    auto error = [&](absl::string_view message) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line.number, ": ", message));
    };
    rapidjson::Document doc;
    JsonParseOptions options;
    options.full_precision = true;
    if (absl::Status parsed = ParseJson(line.text, doc, options); !parsed.ok()) {
      return error(absl::StrCat("invalid JSON: ", parsed.message()));
    }
    if (!doc.IsObject()) return error("expected a JSON object");
    absl::StatusOr<std::string> prompt_id = JsonStringMember(doc, "prompt_id");
    if (!prompt_id.ok()) return error(prompt_id.status().message());
    const rapidjson::Value* score = FindJsonMember(doc, "score");
    if (score == nullptr || !(score->IsNull() || score->IsNumber())) {
      return error("field 'score': expected a number or null");
    }
    out.prompt_ids.push_back(*std::move(prompt_id));
    out.scores.push_back(score->IsNull() ? std::nullopt
                                         : std::optional<double>(score->GetDouble()));
    const rapidjson::Value* metrics = FindJsonMember(doc, "metrics");
    const rapidjson::Value* adjusted = metrics != nullptr && metrics->IsObject()
                                           ? FindJsonMember(*metrics, kLengthAdjustedScoreKey)
                                           : nullptr;
    out.adjusted.push_back(adjusted != nullptr && adjusted->IsNumber()
                               ? std::optional<double>(adjusted->GetDouble())
                               : std::nullopt);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ListCheckpointFolders(const std::string& parent,
                                                               const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(parent, error)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", parent, "' is not a folder"));
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(parent, error), end; !error && it != end; it.increment(error)) {
    if (it->is_directory(error) && fs::exists(it->path() / "summary.json", error)) {
      names.push_back(it->path().filename().string());
    }
  }
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot list '", parent, "': ", error.message()));
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", parent, "' has no <checkpoint>/summary.json"));
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace hb::commands_internal
