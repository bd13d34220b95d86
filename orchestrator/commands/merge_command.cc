// `hb-orchestrator merge`: one report per checkpoint from the outputs of sharded runs.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/report/checkpoint_report.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

// What a shard's summary.json says about how its checkpoint was graded.
struct ShardProvenance {
  std::string shard_dir;
  std::string checkpoint_dir;  // <shard>/<checkpoint>
  std::string checkpoint;
  std::string dataset_path, dataset_sha256, responses_path, responses_sha256, template_sha256;
  int64_t examples = -1;
  GraderSettings grader;
  std::string grader_endpoint;
  uint32_t seed = 0;
  int checkpoint_index = 0;
  bool simulated = false;
};

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

absl::StatusOr<ShardProvenance> ReadProvenance(const std::string& shard_dir,
                                               const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/summary.json";
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  SummaryReader reader(path);
  HB_RETURN_IF_ERROR(reader.Parse(text));
  ShardProvenance p;
  p.shard_dir = shard_dir;
  p.checkpoint_dir = checkpoint_dir;
  HB_ASSIGN_OR_RETURN(p.checkpoint, reader.String("checkpoint"));
  HB_ASSIGN_OR_RETURN(p.dataset_path, reader.String("provenance.dataset.path"));
  HB_ASSIGN_OR_RETURN(p.dataset_sha256, reader.String("provenance.dataset.sha256"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* examples, reader.Get("provenance.examples"));
  if (!examples->IsNull()) {
    HB_ASSIGN_OR_RETURN(p.examples, reader.Int("provenance.examples"));
  }
  HB_ASSIGN_OR_RETURN(p.responses_path, reader.String("provenance.responses.path"));
  HB_ASSIGN_OR_RETURN(p.responses_sha256, reader.String("provenance.responses.sha256"));
  HB_ASSIGN_OR_RETURN(p.template_sha256, reader.String("provenance.grader_template_sha256"));
  HB_ASSIGN_OR_RETURN(p.grader.model, reader.String("provenance.grader.model"));
  HB_ASSIGN_OR_RETURN(p.grader.temperature, reader.Double("provenance.grader.temperature"));
  HB_ASSIGN_OR_RETURN(int64_t max_tokens, reader.Int("provenance.grader.max_tokens"));
  p.grader.max_tokens = static_cast<int>(max_tokens);
  HB_ASSIGN_OR_RETURN(p.grader.system_message, reader.String("provenance.grader.system_message"));
  HB_ASSIGN_OR_RETURN(p.grader_endpoint, reader.String("provenance.grader_endpoint"));
  HB_ASSIGN_OR_RETURN(int64_t seed, reader.Int("provenance.seed"));
  if (seed < 0 || seed > 0xFFFFFFFFLL) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": field 'provenance.seed': ", seed, " does not fit in 32 bits"));
  }
  p.seed = static_cast<uint32_t>(seed);
  HB_ASSIGN_OR_RETURN(int64_t index, reader.Int("provenance.checkpoint_index"));
  p.checkpoint_index = static_cast<int>(index);
  HB_ASSIGN_OR_RETURN(p.simulated, reader.Bool("provenance.simulated"));
  return p;
}

// The first field in which `b` disagrees with `a`, as "<name> ('x' vs 'y')", or "".
// `compare_responses` is false for checkpoints sampled per shard (`run --policy`): each shard
// then graded its own responses file.
std::string Disagreement(const ShardProvenance& a, const ShardProvenance& b,
                         bool compare_responses) {
  auto differs = [](const char* name, const std::string& x, const std::string& y) {
    return x == y ? std::string() : absl::StrCat(name, " ('", x, "' vs '", y, "')");
  };
  for (std::string d :
       {differs("checkpoint name", a.checkpoint, b.checkpoint),
        differs("dataset sha256", a.dataset_sha256, b.dataset_sha256),
        differs("examples", absl::StrCat(a.examples), absl::StrCat(b.examples)),
        compare_responses ? differs("responses sha256", a.responses_sha256, b.responses_sha256)
                          : std::string(),
        differs("grader template sha256", a.template_sha256, b.template_sha256),
        differs("grader model", a.grader.model, b.grader.model),
        differs("grader temperature", PythonFloatRepr(a.grader.temperature),
                PythonFloatRepr(b.grader.temperature)),
        differs("grader max_tokens", absl::StrCat(a.grader.max_tokens),
                absl::StrCat(b.grader.max_tokens)),
        differs("grader system message", a.grader.system_message, b.grader.system_message),
        differs("seed", absl::StrCat(a.seed), absl::StrCat(b.seed)),
        differs("checkpoint index", absl::StrCat(a.checkpoint_index),
                absl::StrCat(b.checkpoint_index))}) {
    if (!d.empty()) return d;
  }
  return "";
}

// The checkpoint folders (those holding summary.json) of one shard, sorted by name.
absl::StatusOr<std::vector<std::string>> ListCheckpoints(const std::string& shard_dir) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(shard_dir, error)) {
    return absl::InvalidArgumentError(absl::StrCat("shard '", shard_dir, "' is not a folder"));
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(shard_dir, error), end; !error && it != end; it.increment(error)) {
    if (it->is_directory(error) && fs::exists(it->path() / "summary.json", error)) {
      names.push_back(it->path().filename().string());
    }
  }
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot list shard '", shard_dir, "': ", error.message()));
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard '", shard_dir, "' has no <checkpoint>/summary.json"));
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct MergedCheckpoint {
  std::string name;  // folder name
  std::vector<ShardProvenance> shards;
};

// True when every shard graded a responses file of its own, RUN_DIR/<checkpoint>/
// responses.jsonl, as `run --policy` samples per shard.
bool SampledPerShard(const MergedCheckpoint& merged) {
  std::error_code error;
  for (const ShardProvenance& shard : merged.shards) {
    if (!std::filesystem::equivalent(shard.responses_path,
                                     shard.checkpoint_dir + "/responses.jsonl", error)) {
      return false;
    }
  }
  return true;
}

// The shards' own responses files joined into OUT/<checkpoint>/responses.jsonl (each checked
// against the sha256 its shard recorded), loaded against `dataset`.
absl::StatusOr<ResponseSet> JoinShardResponses(const MergedCheckpoint& merged,
                                               const Dataset& dataset,
                                               const MergeOptions& options) {
  std::string joined;
  for (const ShardProvenance& shard : merged.shards) {
    HB_ASSIGN_OR_RETURN(ResponseSet part, LoadResponses(shard.responses_path, dataset));
    if (part.sha256 != shard.responses_sha256) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", merged.name, "': responses '", shard.responses_path, "' have sha256 ",
          part.sha256, " but shard '", shard.shard_dir, "' graded ", shard.responses_sha256));
    }
    HB_ASSIGN_OR_RETURN(std::string text, ReadFile(shard.responses_path));
    if (!text.empty() && text.back() != '\n') text += '\n';
    joined += text;
  }
  const std::string path = options.out + "/" + merged.name + "/responses.jsonl";
  HB_RETURN_IF_ERROR(MakeDirs(options.out + "/" + merged.name));
  HB_RETURN_IF_ERROR(WriteFileAtomically(path, joined));
  return LoadResponses(path, dataset);
}

absl::StatusOr<CheckpointResult> MergeOne(const MergedCheckpoint& merged,
                                          const MergeOptions& options) {
  const ShardProvenance& first = merged.shards.front();
  auto override_it = options.responses.find(merged.name);
  const bool per_shard = override_it == options.responses.end() && SampledPerShard(merged);
  for (const ShardProvenance& shard : merged.shards) {
    std::string disagreement = Disagreement(first, shard, !per_shard);
    if (!disagreement.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint '", merged.name, "': shard '",
                                                     shard.shard_dir, "' disagrees with shard '",
                                                     first.shard_dir, "' on ", disagreement));
    }
  }
  const std::string dataset_path = options.dataset.empty() ? first.dataset_path : options.dataset;
  HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(dataset_path, {}));
  if (dataset.sha256 != first.dataset_sha256) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint '", merged.name, "': dataset '", dataset_path, "' has sha256 ",
                     dataset.sha256, " but the shards graded ", first.dataset_sha256));
  }
  const std::string responses_path = override_it != options.responses.end() ? override_it->second
                                     : per_shard
                                         ? options.out + "/" + merged.name + "/responses.jsonl"
                                         : first.responses_path;
  ResponseSet responses;
  if (per_shard) {
    HB_ASSIGN_OR_RETURN(responses, JoinShardResponses(merged, dataset, options));
  } else {
    HB_ASSIGN_OR_RETURN(responses, LoadResponses(responses_path, dataset));
    if (responses.sha256 != first.responses_sha256) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", merged.name, "': responses '", responses_path, "' have sha256 ",
          responses.sha256, " but the shards graded ", first.responses_sha256));
    }
  }
  commands_internal::ApplyExamples(dataset, first.examples);

  std::vector<VerdictRow> verdicts;
  std::vector<RowFailure> failures;
  std::set<std::string> endpoints;
  bool simulated = false;
  for (const ShardProvenance& shard : merged.shards) {
    HB_ASSIGN_OR_RETURN(std::vector<VerdictRow> rows,
                        LoadVerdicts(shard.checkpoint_dir + "/verdicts.jsonl", dataset));
    std::move(rows.begin(), rows.end(), std::back_inserter(verdicts));
    std::error_code error;
    const std::string failures_path = shard.checkpoint_dir + "/failures.jsonl";
    if (std::filesystem::exists(failures_path, error)) {
      HB_ASSIGN_OR_RETURN(std::vector<RowFailure> failed, LoadFailures(failures_path, dataset));
      std::move(failed.begin(), failed.end(), std::back_inserter(failures));
    }
    endpoints.insert(shard.grader_endpoint);
    simulated = simulated || shard.simulated;
  }

  ReportContext context;
  context.checkpoint = first.checkpoint;
  context.dataset_path = dataset_path;
  context.dataset_sha256 = first.dataset_sha256;
  context.responses_path = responses_path;
  context.responses_sha256 = responses.sha256;
  context.template_sha256 = first.template_sha256;
  context.grader = first.grader;
  context.seed = first.seed;
  context.simulated = simulated;
  // Missing rows mark the merged report incomplete by themselves (WriteCheckpointReport).
  context.incomplete = false;
  context.grader_endpoint = absl::StrJoin(endpoints, ",");
  context.examples = first.examples;
  context.checkpoint_index = first.checkpoint_index;
  absl::StatusOr<CheckpointResult> result = WriteCheckpointReport(
      dataset, responses, verdicts, failures, context, options.out + "/" + merged.name);
  if (!result.ok()) {
    return absl::Status(result.status().code(), absl::StrCat("checkpoint '", merged.name,
                                                             "': ", result.status().message()));
  }
  return result;
}

}  // namespace

absl::StatusOr<std::string> RunMerge(const MergeOptions& options) {
  HB_RETURN_IF_ERROR(commands_internal::Require("out", options.out));
  if (options.shard_dirs.empty()) {
    return absl::InvalidArgumentError("merge needs at least one SHARD_DIR");
  }
  std::map<std::string, MergedCheckpoint> by_name;
  for (const std::string& shard_dir : options.shard_dirs) {
    HB_ASSIGN_OR_RETURN(std::vector<std::string> names, ListCheckpoints(shard_dir));
    for (const std::string& name : names) {
      HB_ASSIGN_OR_RETURN(ShardProvenance provenance,
                          ReadProvenance(shard_dir, shard_dir + "/" + name));
      MergedCheckpoint& merged = by_name[name];
      merged.name = name;
      merged.shards.push_back(std::move(provenance));
    }
  }
  for (const auto& [name, path] : options.responses) {
    if (by_name.find(name) == by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses names checkpoint '", name, "', which no shard has"));
    }
  }
  std::vector<const MergedCheckpoint*> order;
  for (const auto& [name, merged] : by_name) order.push_back(&merged);
  std::stable_sort(order.begin(), order.end(),
                   [](const MergedCheckpoint* a, const MergedCheckpoint* b) {
                     return a->shards.front().checkpoint_index < b->shards.front().checkpoint_index;
                   });
  std::vector<CheckpointResult> results;
  std::string message;
  for (const MergedCheckpoint* merged : order) {
    HB_ASSIGN_OR_RETURN(CheckpointResult result, MergeOne(*merged, options));
    absl::StrAppend(&message, message.empty() ? "" : "\n", "merge: ", merged->name, ": ",
                    merged->shards.size(), " shards, ", result.graded, " of ", result.tasks,
                    " tasks graded, ", result.graded_rows, " of ", result.rows, " rows graded, ",
                    result.failed_rows, " failed");
    results.push_back(std::move(result));
  }
  if (results.size() >= 2) {
    HB_RETURN_IF_ERROR(WriteComparison(results, order.front()->shards.front().seed, options.out));
    absl::StrAppend(&message, "\nmerge: wrote ", options.out, "/comparison.json");
  }
  absl::StrAppend(&message, "\nmerge: reports in ", options.out);
  return message;
}

}  // namespace hb
