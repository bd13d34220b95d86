// WriteComparison (declared in checkpoint_report.h): comparison.json and comparison.html.
#include <string>
#include <vector>

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

using report_internal::kBootstrapSamples;

absl::Status WriteComparison(const std::vector<CheckpointResult>& results, uint32_t seed,
                             const std::string& out_dir) {
  if (results.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("a comparison needs at least two checkpoints, got ", results.size()));
  }
  const CheckpointResult& baseline = results[0];
  for (size_t i = 1; i < results.size(); ++i) {
    if (results[i].prompt_ids != baseline.prompt_ids ||
        results[i].task_scores.size() != baseline.task_scores.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", results[i].checkpoint,
          "' was graded on a different task list than the baseline '", baseline.checkpoint, "'"));
    }
  }
  AggregateOptions options;
  options.bootstrap_samples = kBootstrapSamples;
  options.seed = seed;

  std::vector<HtmlComparisonCheckpoint> html_checkpoints;
  std::vector<HtmlComparisonPair> html_pairs;
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  writer.Key("baseline");
  WriteJsonString(writer, baseline.checkpoint);
  writer.Key("seed");
  writer.Uint(seed);
  writer.Key("bootstrap_samples");
  writer.Int(kBootstrapSamples);
  writer.Key("checkpoints");
  writer.StartArray();
  for (const CheckpointResult& result : results) {
    writer.StartObject();
    writer.Key("checkpoint");
    WriteJsonString(writer, result.checkpoint);
    writer.Key("score");
    WritePythonFloat(writer, result.score);
    writer.Key("bootstrap_std");
    WritePythonFloat(writer, result.score_bootstrap_std);
    writer.Key("graded");
    writer.Int64(result.graded);
    writer.Key("tasks");
    writer.Int64(result.tasks);
    writer.EndObject();
    HtmlComparisonCheckpoint view;
    view.checkpoint = result.checkpoint;
    if (result.graded > 0) view.score = result.score;
    view.bootstrap_std = result.score_bootstrap_std;
    view.graded = result.graded;
    view.tasks = result.tasks;
    view.metrics = result.aggregate.metrics;  // per-theme lines across checkpoints
    html_checkpoints.push_back(std::move(view));
  }
  writer.EndArray();
  writer.Key("differences");
  writer.StartArray();
  for (size_t c = 1; c < results.size(); ++c) {
    std::vector<double> a, b;
    for (size_t t = 0; t < baseline.task_scores.size(); ++t) {
      if (baseline.task_scores[t].has_value() && results[c].task_scores[t].has_value()) {
        a.push_back(*baseline.task_scores[t]);
        b.push_back(*results[c].task_scores[t]);
      }
    }
    HtmlComparisonPair pair;
    pair.baseline = baseline.checkpoint;
    pair.checkpoint = results[c].checkpoint;
    writer.StartObject();
    writer.Key("baseline");
    WriteJsonString(writer, baseline.checkpoint);
    writer.Key("checkpoint");
    WriteJsonString(writer, results[c].checkpoint);
    if (!a.empty()) {
      PairedDifference difference = PairedBootstrap(a, b, options);
      pair.difference = difference;
      writer.Key("difference");
      WritePythonFloat(writer, difference.difference);
      writer.Key("ci_low");
      WritePythonFloat(writer, difference.ci_low);
      writer.Key("ci_high");
      WritePythonFloat(writer, difference.ci_high);
    } else {
      for (const char* key : {"difference", "ci_low", "ci_high"}) {
        writer.Key(key);
        writer.Null();
      }
    }
    writer.Key("n");
    writer.Int64(static_cast<int64_t>(a.size()));
    writer.EndObject();
    html_pairs.push_back(std::move(pair));
  }
  writer.EndArray();
  writer.EndObject();

  HB_RETURN_IF_ERROR(MakeDirs(out_dir));
  HB_RETURN_IF_ERROR(WriteFileAtomically(out_dir + "/comparison.json",
                                         std::string(buffer.GetString(), buffer.GetSize()) + "\n"));
  HB_RETURN_IF_ERROR(WriteFileAtomically(
      out_dir + "/comparison.html",
      RenderComparisonHtml(html_checkpoints, html_pairs, seed, kBootstrapSamples)));
  return absl::OkStatus();
}

}  // namespace hb
