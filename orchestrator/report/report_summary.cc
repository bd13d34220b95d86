#include "orchestrator/report/report_summary.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/json.h"
#include "common/base/json_io.h"
#include "grader/grader_identity.h"
#include "grader/grader_settings.h"
#include "http/url_redaction.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

namespace hb::report_internal {
namespace {

template <typename Writer>
void WriteStringArray(Writer& writer, const std::vector<std::string>& values) {
  writer.StartArray();
  for (const std::string& value : values) WriteJsonString(writer, value);
  writer.EndArray();
}

// "https://api.openai.com/v1 (hb-grader 0.1.0, 2 replicas)", or "not reported".
// The grader as the report shows it: what it sends on its API.
std::string GraderFact(const GraderSettings& grader) {
  std::string fact =
      grader.api == GraderApi::kResponses
          ? absl::StrCat(grader.model, ", Responses API, reasoning effort ",
                         grader.reasoning_effort.empty() ? "not sent" : grader.reasoning_effort)
          : absl::StrCat(grader.model, ", chat completions, temperature ",
                         PythonFloatRepr(grader.temperature), ", max_tokens ", grader.max_tokens,
                         ", system message \"", grader.system_message, "\"");
  if (!grader.extra_body.empty()) absl::StrAppend(&fact, ", extra body ", grader.extra_body);
  if (!grader.headers.empty()) {
    absl::StrAppend(&fact, ", headers ", RedactedHeaders(grader.headers));
  }
  return fact;
}

std::string LengthAdjustmentFact(const ReportContext& context, const CheckpointResult& result) {
  if (!context.length_adjustment.has_value()) return "not applied";
  std::string fact =
      absl::StrCat("score - ", PythonFloatRepr(context.length_adjustment->penalty_per_500_chars),
                   " x (characters of the reply - ",
                   PythonFloatRepr(context.length_adjustment->center), ") / 500 per task");
  if (const MetricSummary* metric = FindMetric(result.aggregate.metrics, kLengthAdjustedScoreKey)) {
    // Printed like the top score (summary.json keeps every digit).
    absl::StrAppend(&fact, absl::StrFormat("; overall_score_length_adjusted %.3f \xC2\xB1 %.3f "
                                           "(bootstrap std, n %d)",
                                           metric->mean, metric->bootstrap_std, metric->n_samples));
  }
  return fact;
}

std::string GraderUpstreamFact(const ReportContext& context) {
  if (context.grader_upstream.empty()) return "not reported";
  std::string fact =
      absl::StrCat(RedactUrl(context.grader_upstream), " (hb-grader ", context.grader_version);
  if (!context.grader_replicas.empty()) {
    absl::StrAppend(&fact, ", ", context.grader_replicas.size(), " replica(s)");
  }
  return fact + ")";
}

// summary.json "skipped_unscorable_tasks": the tasks `run --skip-unscorable-tasks` left out.
void WriteUnscorableTasks(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                          const std::vector<UnscorableTask>& tasks) {
  writer.Key("skipped_unscorable_tasks");
  writer.StartArray();
  for (const UnscorableTask& task : tasks) {
    writer.StartObject();
    writer.Key("prompt_id");
    WriteJsonString(writer, task.prompt_id);
    writer.Key("line");
    writer.Int(task.line);
    writer.Key("reason");
    WriteJsonString(writer, task.reason);
    writer.EndObject();
  }
  writer.EndArray();
}

// report.html's fact on the tasks left out as unscorable.
std::string UnscorableFact(const std::vector<UnscorableTask>& tasks) {
  std::vector<std::string> named;
  for (const UnscorableTask& task : tasks) {
    named.push_back(absl::StrCat(task.prompt_id, " (line ", task.line, ")"));
  }
  return absl::StrCat(tasks.size(),
                      " task(s) left out (--skip-unscorable-tasks): ", absl::StrJoin(named, ", "),
                      ": ", tasks.front().reason);
}

// summary.json "usage": what the grading spent and what the verdict cache saved.
void WriteUsage(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                const ReportContext& context, const ReportUsage& usage) {
  auto tokens = [&writer](const TokenCounts& t) {
    writer.Key("prompt_tokens");
    writer.Int64(t.prompt_tokens);
    writer.Key("cached_tokens");
    writer.Int64(t.cached_tokens);
    writer.Key("completion_tokens");
    writer.Int64(t.completion_tokens);
  };
  writer.Key("usage");
  writer.StartObject();
  writer.Key("attempts");
  writer.Int64(usage.attempts);
  tokens(usage.spent());
  writer.Key("cost_usd");
  writer.Double(usage.CostUsd(context.prices, context.batch_price_factor));
  writer.Key("batch_rows");
  writer.Int64(usage.batch_rows);
  writer.Key("batch_price_factor");
  writer.Double(context.batch_price_factor);
  writer.Key("from_cache_rows");
  writer.Int64(usage.from_cache_rows);
  writer.Key("saved_tokens");
  writer.StartObject();
  tokens(usage.saved);
  writer.EndObject();
  writer.Key("saved_usd");
  writer.Double(CostUsd(usage.saved, context.prices));
  writer.Key("wall_seconds");
  if (context.wall_time.has_value()) {
    writer.Double(absl::ToDoubleSeconds(*context.wall_time));
  } else {
    writer.Null();
  }
  writer.Key("prices_usd_per_mtok");
  writer.StartObject();
  writer.Key("input");
  writer.Double(context.prices.input_per_mtok);
  writer.Key("cached_input");
  writer.Double(context.prices.cached_input_per_mtok);
  writer.Key("output");
  writer.Double(context.prices.output_per_mtok);
  writer.EndObject();
  writer.EndObject();
}

// report.html's "cost" fact: the same figures as WriteUsage, in one line.
std::string CostFact(const ReportContext& context, const ReportUsage& usage) {
  std::string text =
      absl::StrFormat("$%.2f: %d input tokens (%d cached), %d output tokens",
                      usage.CostUsd(context.prices, context.batch_price_factor),
                      usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens);
  if (usage.batch_rows > 0) {
    absl::StrAppend(&text, absl::StrFormat("; %d rows through the Batch API at x%g the price",
                                           usage.batch_rows, context.batch_price_factor));
  }
  if (usage.from_cache_rows > 0) {
    absl::StrAppend(&text,
                    absl::StrFormat("; %d rows from the verdict cache saved $%.2f",
                                    usage.from_cache_rows, CostUsd(usage.saved, context.prices)));
  }
  if (context.wall_time.has_value()) {
    // Whole seconds, but tenths under a minute: a 0.9 s run is not "0".
    const absl::Duration unit =
        *context.wall_time < absl::Minutes(1) ? absl::Milliseconds(100) : absl::Seconds(1);
    absl::StrAppend(&text, "; wall time ",
                    absl::FormatDuration(absl::Trunc(*context.wall_time, unit)));
  }
  return text;
}

// summary.json's head: the checkpoint, its headline score and the reference's metrics.
void WriteScore(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                const ReportContext& context, const CheckpointResult& result) {
  writer.Key("checkpoint");
  WriteJsonString(writer, context.checkpoint);
  const HeadlineScore headline = HeadlineOf(result);
  writer.Key("score");
  WritePythonFloat(writer, headline.score);
  writer.Key("raw_score");
  WritePythonFloat(writer, headline.raw);
  writer.Key("score_length_adjusted");
  writer.Bool(headline.length_adjusted);
  writer.Key("metrics");
  writer.StartObject();
  if (result.graded > 0) {
    for (const auto& [key, value] : ReferenceMetricsMap(result.aggregate)) {
      WriteJsonString(writer, key);
      if (absl::EndsWith(key, ":n_samples")) {
        writer.Int64(static_cast<int64_t>(value));
      } else {
        WritePythonFloat(writer, value);
      }
    }
  }
  writer.EndObject();
}

// summary.json "counts": tasks and rows, graded and not.
void WriteCounts(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                 const CheckpointResult& result) {
  writer.Key("counts");
  writer.StartObject();
  writer.Key("tasks");
  writer.Int64(result.tasks);
  writer.Key("graded");
  writer.Int64(result.graded);
  writer.Key("not_graded");
  writer.Int64(result.not_graded);
  writer.Key("rows");
  writer.Int64(result.rows);
  writer.Key("graded_rows");
  writer.Int64(result.graded_rows);
  writer.Key("failed_rows");
  writer.Int64(result.failed_rows);
  writer.EndObject();
}

// provenance: the inputs graded (dataset, subset, selection, responses, grader template).
void WriteInputs(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                 const ReportContext& context) {
  writer.Key("dataset");
  writer.StartObject();
  writer.Key("path");
  WriteJsonString(writer, context.dataset_path);
  writer.Key("sha256");
  WriteJsonString(writer, context.dataset_sha256);
  writer.EndObject();
  writer.Key("subset");
  if (context.subset.empty()) {
    writer.Null();
  } else {
    WriteJsonString(writer, context.subset);
  }
  writer.Key("examples");
  if (context.examples >= 0) {
    writer.Int64(context.examples);
  } else {
    writer.Null();
  }
  writer.Key("responses");
  writer.StartObject();
  writer.Key("path");
  WriteJsonString(writer, context.responses_path);
  writer.Key("sha256");
  WriteJsonString(writer, context.responses_sha256);
  writer.Key("ignored_extra");
  writer.Int64(context.responses_ignored_extra);
  writer.EndObject();
  writer.Key("grader_template_sha256");
  WriteJsonString(writer, context.template_sha256);
}

// provenance "grader": what the grader graded with.
void WriteGrader(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                 const ReportContext& context) {
  writer.Key("grader");
  writer.StartObject();
  writer.Key("model");
  WriteJsonString(writer, context.grader.model);
  // Only what the grader's API sends (SentOnApi): a Responses grader has no temperature,
  // max_tokens or system message.
  const GraderApi api = context.grader.api;
  if (SentOnApi(api, "temperature")) {
    writer.Key("temperature");
    WritePythonFloat(writer, context.grader.temperature);
  }
  if (SentOnApi(api, "max_tokens")) {
    writer.Key("max_tokens");
    writer.Int(context.grader.max_tokens);
  }
  if (SentOnApi(api, "system_message")) {
    writer.Key("system_message");
    WriteJsonString(writer, context.grader.system_message);
  }
  writer.Key("api");
  WriteJsonString(writer, GraderApiName(context.grader.api));
  writer.Key("reasoning_effort");
  if (context.grader.reasoning_effort.empty()) {
    writer.Null();
  } else {
    WriteJsonString(writer, context.grader.reasoning_effort);
  }
  // --llm-extra-body (null when none) and --llm-header by name, values redacted.
  writer.Key("extra_body");
  if (context.grader.extra_body.empty()) {
    writer.Null();
  } else {
    WriteRawJson(writer, context.grader.extra_body, rapidjson::kObjectType);
  }
  writer.Key("headers");
  writer.StartArray();
  for (const GraderHeader& header : context.grader.headers) {
    writer.StartObject();
    writer.Key("name");
    WriteJsonString(writer, header.name);
    writer.Key("value");
    writer.String("[redacted]");
    writer.Key("value_sha256");
    WriteJsonString(writer, header.value_sha256);
    writer.EndObject();
  }
  writer.EndArray();
  writer.Key("upstream_base_url");
  WriteJsonString(writer, RedactUrl(context.grader_upstream));
  writer.Key("version");
  WriteJsonString(writer, context.grader_version);
  writer.Key("replicas");
  WriteStringArray(writer, context.grader_replicas);
  writer.EndObject();
}

// provenance: how the run was made (endpoint, length adjustment, sharding, seed, versions,
// simulated).
void WriteRunFacts(rapidjson::PrettyWriter<rapidjson::StringBuffer>& writer,
                   const ReportContext& context) {
  writer.Key("grader_endpoint");
  WriteJsonString(writer, RedactUrl(context.grader_endpoint));
  writer.Key("length_adjustment");
  if (context.length_adjustment.has_value()) {
    writer.StartObject();
    writer.Key("center");
    WritePythonFloat(writer, context.length_adjustment->center);
    writer.Key("penalty_per_500_chars");
    WritePythonFloat(writer, context.length_adjustment->penalty_per_500_chars);
    writer.EndObject();
  } else {
    writer.Null();
  }
  writer.Key("shard");
  if (context.shard_count > 0) {
    writer.StartObject();
    writer.Key("index");
    writer.Int(context.shard_index);
    writer.Key("count");
    writer.Int(context.shard_count);
    writer.EndObject();
  } else {
    writer.Null();
  }
  writer.Key("shards");
  WriteStringArray(writer, context.shards);
  writer.Key("seed");
  writer.Uint(context.seed);
  writer.Key("bootstrap_samples");
  writer.Int(kBootstrapSamples);
  writer.Key("checkpoint_index");
  writer.Int(context.checkpoint_index);
  writer.Key("tool_version");
  WriteJsonString(writer, ToolVersion());
  writer.Key("simulated");
  writer.Bool(context.simulated);
  writer.Key("simulated_reason");
  if (context.simulated && !context.simulated_reason.empty()) {
    WriteJsonString(writer, context.simulated_reason);
  } else {
    writer.Null();
  }
}

}  // namespace

std::string SummaryJson(const ReportContext& context, const CheckpointResult& result,
                        bool incomplete, const std::string& generated_at) {
  rapidjson::StringBuffer buffer;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
  writer.SetIndent(' ', 2);
  writer.StartObject();
  WriteScore(writer, context, result);
  WriteCounts(writer, result);
  WriteUnscorableTasks(writer, context.unscorable_tasks);
  WriteUsage(writer, context, result.usage);
  writer.Key("provenance");
  writer.StartObject();
  WriteInputs(writer, context);
  WriteGrader(writer, context);
  WriteRunFacts(writer, context);
  writer.Key("incomplete");
  writer.Bool(incomplete);
  writer.Key("generated_at");
  WriteJsonString(writer, generated_at);
  writer.EndObject();
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

HtmlReport BuildHtmlHead(const ReportContext& context, const CheckpointResult& result,
                         const std::vector<TaskState>& tasks, bool incomplete,
                         const std::string& generated_at) {
  HtmlReport html;
  html.checkpoint = context.checkpoint;
  const HeadlineScore headline = HeadlineOf(result);
  if (headline.graded) html.score = headline.score;
  html.score_bootstrap_std = headline.bootstrap_std;
  if (headline.length_adjusted) {
    html.raw_score = headline.raw;
    html.raw_bootstrap_std = headline.raw_bootstrap_std;
  }
  html.simulated = context.simulated;
  html.simulated_reason = context.simulated_reason;
  html.incomplete = incomplete;
  html.facts = {
      {"tasks graded",
       absl::StrCat(result.graded, " of ", result.tasks, " (", result.not_graded, " not graded)")},
      {"rubric rows", absl::StrCat(result.graded_rows, " graded, ", result.failed_rows,
                                   " failed, of ", result.rows)},
      {"unscorable tasks",
       context.unscorable_tasks.empty() ? "none" : UnscorableFact(context.unscorable_tasks)},
      {"cost", CostFact(context, result.usage)},
      {"dataset", absl::StrCat(context.dataset_path, " (sha256 ", context.dataset_sha256, ")")},
      {"subset", context.subset.empty() ? "not given" : context.subset},
      {"examples", context.examples >= 0 ? absl::StrCat(context.examples) : "all"},
      {"responses",
       absl::StrCat(context.responses_path, " (sha256 ", context.responses_sha256, ")",
                    context.responses_ignored_extra > 0
                        ? absl::StrCat("; ", context.responses_ignored_extra,
                                       " responses for tasks outside the dataset ignored")
                        : "")},
      {"grader template sha256", context.template_sha256},
      {"grader", GraderFact(context.grader)},
      {"length adjustment", LengthAdjustmentFact(context, result)},
      {"grader endpoint", RedactUrl(context.grader_endpoint)},
      {"grader upstream", GraderUpstreamFact(context)},
      {"bootstrap", absl::StrCat(kBootstrapSamples, " samples, seed ", context.seed)},
      {"tool version", ToolVersion()},
      {"generated at", generated_at},
  };
  html.metrics = result.aggregate.metrics;
  // The worst-tasks table only needs each task's prompt_id and score; the page's task
  // sections are rendered one at a time by BuildHtmlTask.
  html.tasks.reserve(tasks.size());
  for (const TaskState& task : tasks) {
    HtmlTask view;
    view.prompt_id = task.example->prompt_id;
    view.score = task.score;
    html.tasks.push_back(std::move(view));
  }
  return html;
}

}  // namespace hb::report_internal
