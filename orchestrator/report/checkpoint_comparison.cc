// WriteComparison (declared in checkpoint_report.h): comparison.json and comparison.html. One
// code path for `run` and `merge` (checkpoints written beside the comparison) and `compare`
// (checkpoints graded in separate runs or Jobs).
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/report_summary.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

namespace hb {
namespace {

using report_internal::kBootstrapSamples;
using ComparisonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

using TaskScoreList = std::vector<std::optional<double>>;

// The graded prompt_ids of `result` -> their `scores` (task_scores or adjusted_task_scores).
absl::flat_hash_map<std::string, double> GradedScores(const CheckpointResult& result,
                                                      const TaskScoreList& scores) {
  absl::flat_hash_map<std::string, double> graded;
  for (size_t t = 0; t < result.prompt_ids.size() && t < scores.size(); ++t) {
    if (scores[t].has_value()) graded[result.prompt_ids[t]] = *scores[t];
  }
  return graded;
}

absl::flat_hash_map<std::string, double> GradedScores(const CheckpointResult& result) {
  return GradedScores(result, result.task_scores);
}

// The scores (`pick`: raw or length-adjusted) of the tasks graded in both, paired by prompt_id,
// in the baseline's order.
void PairGraded(const CheckpointResult& baseline, const CheckpointResult& other,
                const TaskScoreList CheckpointResult::*pick, std::vector<double>& a,
                std::vector<double>& b) {
  const TaskScoreList& base_scores = baseline.*pick;
  const absl::flat_hash_map<std::string, double> other_scores = GradedScores(other, other.*pick);
  for (size_t t = 0; t < baseline.prompt_ids.size() && t < base_scores.size(); ++t) {
    if (!base_scores[t].has_value()) continue;
    auto it = other_scores.find(baseline.prompt_ids[t]);
    if (it == other_scores.end()) continue;
    a.push_back(*base_scores[t]);
    b.push_back(it->second);
  }
}

// The paired-bootstrap difference of `pick` (nullopt when no task is graded in both).
std::optional<PairedDifference> Difference(const CheckpointResult& baseline,
                                           const CheckpointResult& other,
                                           const TaskScoreList CheckpointResult::*pick,
                                           uint32_t seed) {
  std::vector<double> a, b;
  PairGraded(baseline, other, pick, a, b);
  if (a.empty()) return std::nullopt;
  AggregateOptions options;
  options.bootstrap_samples = kBootstrapSamples;
  options.seed = seed;
  return PairedBootstrap(a, b, options);
}

// {difference, ci_low, ci_high} (nulls without a difference) and n.
void WriteDifferenceFields(ComparisonWriter& writer,
                           const std::optional<PairedDifference>& difference) {
  for (const auto& [key, value] : {std::pair<const char*, double PairedDifference::*>{
                                       "difference", &PairedDifference::difference},
                                   {"ci_low", &PairedDifference::ci_low},
                                   {"ci_high", &PairedDifference::ci_high}}) {
    writer.Key(key);
    if (difference.has_value()) {
      WritePythonFloat(writer, (*difference).*value);
    } else {
      writer.Null();
    }
  }
  writer.Key("n");
  writer.Int64(difference.has_value() ? difference->n : 0);
}

// Tasks graded by every checkpoint.
int64_t CommonGradedTasks(const std::vector<CheckpointResult>& results) {
  absl::flat_hash_map<std::string, size_t> graded_by;
  for (const CheckpointResult& result : results) {
    for (const auto& [prompt_id, score] : GradedScores(result)) ++graded_by[prompt_id];
  }
  int64_t common = 0;
  for (const auto& [prompt_id, n] : graded_by) common += n == results.size();
  return common;
}

// The checkpoint's report.html relative to `out_dir`.
std::string ReportPath(const CheckpointResult& result, const std::string& out_dir) {
  if (result.dir.empty()) return result.checkpoint + "/report.html";
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path base = fs::absolute(out_dir, error);
  fs::path relative = fs::path(result.dir).append("report.html").lexically_relative(base);
  return relative.empty() ? result.dir + "/report.html" : relative.generic_string();
}

// {"mean", "n_samples", "bootstrap_std"}.
void WriteMetricJson(ComparisonWriter& writer, const MetricSummary& metric) {
  writer.StartObject();
  writer.Key("mean");
  WritePythonFloat(writer, metric.mean);
  writer.Key("n_samples");
  writer.Int64(metric.n_samples);
  writer.Key("bootstrap_std");
  WritePythonFloat(writer, metric.bootstrap_std);
  writer.EndObject();
}

void WriteCheckpointJson(ComparisonWriter& writer, const CheckpointResult& result) {
  writer.StartObject();
  writer.Key("checkpoint");
  WriteJsonString(writer, result.checkpoint);
  writer.Key("path");
  WriteJsonString(writer, result.dir.empty() ? result.checkpoint : result.dir);
  writer.Key("score");
  WritePythonFloat(writer, result.score);
  writer.Key("bootstrap_std");
  WritePythonFloat(writer, result.score_bootstrap_std);
  writer.Key("graded");
  writer.Int64(result.graded);
  writer.Key("tasks");
  writer.Int64(result.tasks);
  writer.Key("simulated");
  writer.Bool(result.simulated);
  writer.Key("incomplete");
  writer.Bool(result.incomplete);
  // simple-evals PR #108's length-adjusted score, when the checkpoint was graded with one.
  if (const MetricSummary* adjusted =
          FindMetric(result.aggregate.metrics, kLengthAdjustedScoreKey)) {
    writer.Key(kLengthAdjustedScoreKey);
    WriteMetricJson(writer, *adjusted);
  }
  writer.Key("metrics");  // per theme and per axis: mean, n, bootstrap std
  writer.StartObject();
  for (const MetricSummary& metric : result.aggregate.metrics) {
    if (!absl::StartsWith(metric.name, "theme:") && !absl::StartsWith(metric.name, "axis:")) {
      continue;
    }
    WriteJsonString(writer, metric.name);
    WriteMetricJson(writer, metric);
  }
  writer.EndObject();
  writer.EndObject();
}

HtmlComparisonCheckpoint CheckpointView(const CheckpointResult& result,
                                        const std::string& out_dir) {
  HtmlComparisonCheckpoint view;
  view.checkpoint = result.checkpoint;
  if (result.graded > 0) view.score = result.score;
  view.bootstrap_std = result.score_bootstrap_std;
  view.graded = result.graded;
  view.tasks = result.tasks;
  view.simulated = result.simulated;
  view.incomplete = result.incomplete;
  view.report_path = ReportPath(result, out_dir);
  view.metrics = result.aggregate.metrics;
  return view;
}

// The difference of `pair` (JSON): of the length-adjusted scores when both have them (the raw
// difference beside it, "raw"), else of the raw scores.
void WriteDifferenceJson(ComparisonWriter& writer, const HtmlComparisonPair& pair) {
  writer.StartObject();
  writer.Key("baseline");
  WriteJsonString(writer, pair.baseline);
  writer.Key("checkpoint");
  WriteJsonString(writer, pair.checkpoint);
  WriteDifferenceFields(writer, pair.difference);
  writer.Key("length_adjusted");
  writer.Bool(pair.length_adjusted);
  if (pair.length_adjusted) {
    writer.Key("raw");
    writer.StartObject();
    WriteDifferenceFields(writer, pair.raw);
    writer.EndObject();
  }
  writer.EndObject();
}

absl::Status CheckComparable(const std::vector<CheckpointResult>& results, size_t baseline) {
  if (results.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a comparison needs at least two checkpoints, got ", results.size()));
  }
  if (baseline >= results.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline index ", baseline, " out of range for ", results.size(), " checkpoints"));
  }
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!seen.emplace(results[i].checkpoint, i).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint name '", results[i].checkpoint, "' used twice"));
    }
  }
  return absl::OkStatus();
}

// WriteComparisonOf after its checks.
absl::Status WriteCheckedComparison(const std::vector<CheckpointResult>& results,
                                    const ComparisonParts& parts, uint32_t seed,
                                    const std::string& out_dir, size_t baseline) {
  HtmlComparison page;
  page.baseline = results[baseline].checkpoint;
  page.common_tasks = parts.common_tasks;
  page.seed = seed;
  page.bootstrap_samples = kBootstrapSamples;
  page.pairs = parts.pairs;
  rapidjson::StringBuffer buffer;
  ComparisonWriter writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("baseline");
  WriteJsonString(writer, page.baseline);
  writer.Key("seed");
  writer.Uint(seed);
  writer.Key("bootstrap_samples");
  writer.Int(kBootstrapSamples);
  writer.Key("common_tasks");
  writer.Int64(page.common_tasks);
  writer.Key("checkpoints");
  writer.StartArray();
  for (const CheckpointResult& result : results) {
    WriteCheckpointJson(writer, result);
    page.checkpoints.push_back(CheckpointView(result, out_dir));
  }
  writer.EndArray();
  writer.Key("differences");
  writer.StartArray();
  for (const HtmlComparisonPair& pair : parts.pairs) WriteDifferenceJson(writer, pair);
  writer.EndArray();
  writer.EndObject();

  HB_RETURN_IF_ERROR(MakeDirs(out_dir));
  HB_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/comparison.json",
                                         std::string(buffer.GetString(), buffer.GetSize()) + "\n"));
  return WriteFileAtomically(out_dir + "/comparison.html", RenderComparisonHtml(page));
}

}  // namespace

HtmlComparisonPair ComparisonPairOf(const CheckpointResult& baseline, const CheckpointResult& other,
                                    uint32_t seed) {
  HtmlComparisonPair pair{baseline.checkpoint, other.checkpoint, std::nullopt};
  pair.length_adjusted =
      !baseline.adjusted_task_scores.empty() && !other.adjusted_task_scores.empty();
  const std::optional<PairedDifference> raw =
      Difference(baseline, other, &CheckpointResult::task_scores, seed);
  pair.difference = pair.length_adjusted
                        ? Difference(baseline, other, &CheckpointResult::adjusted_task_scores, seed)
                        : raw;
  if (pair.length_adjusted) pair.raw = raw;
  return pair;
}

absl::flat_hash_set<std::string> GradedPromptIds(const CheckpointResult& result) {
  absl::flat_hash_set<std::string> ids;
  for (size_t t = 0; t < result.prompt_ids.size() && t < result.task_scores.size(); ++t) {
    if (result.task_scores[t].has_value()) ids.insert(result.prompt_ids[t]);
  }
  return ids;
}

absl::Status WriteComparison(const std::vector<CheckpointResult>& results, uint32_t seed,
                             const std::string& out_dir, size_t baseline) {
  HB_RETURN_IF_ERROR(CheckComparable(results, baseline));
  ComparisonParts parts;
  parts.common_tasks = CommonGradedTasks(results);
  for (size_t c = 0; c < results.size(); ++c) {
    if (c == baseline) continue;
    parts.pairs.push_back(ComparisonPairOf(results[baseline], results[c], seed));
  }
  return WriteCheckedComparison(results, parts, seed, out_dir, baseline);
}

absl::Status WriteComparisonOf(const std::vector<CheckpointResult>& results,
                               const ComparisonParts& parts, uint32_t seed,
                               const std::string& out_dir, size_t baseline) {
  HB_RETURN_IF_ERROR(CheckComparable(results, baseline));
  if (parts.pairs.size() + 1 != results.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a comparison of ", results.size(),
                                                   " checkpoints needs ", results.size() - 1,
                                                   " differences, got ", parts.pairs.size()));
  }
  return WriteCheckedComparison(results, parts, seed, out_dir, baseline);
}

}  // namespace hb
