#include "orchestrator/report/meta_eval_report.h"

#include <initializer_list>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/svg_charts.h"
#include "rapidjson/document.h"
#include "rapidjson/prettywriter.h"
#include "rapidjson/stringbuffer.h"

namespace hb {
namespace {

// The category of a "<category>: <metric>" key, when its metric is `metric`.
std::optional<std::string> CategoryOf(absl::string_view key, absl::string_view metric) {
  const std::string suffix = absl::StrCat(": ", metric);
  if (!absl::EndsWith(key, suffix)) return std::nullopt;
  return std::string(key.substr(0, key.size() - suffix.size()));
}

std::string Value(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%.3f", *v) : "n/a";
}

std::string Spread(const std::optional<PhysicianAgreementSummary>& p) {
  if (!p.has_value()) return "n/a";
  return absl::StrFormat("%.3f..%.3f (mean %.3f, %d physicians)", p->min, p->max, p->mean,
                         p->physicians);
}

std::string Cost(const JudgeReport& judge) {
  const std::optional<double> cost = judge.CostPerThousand();
  return cost.has_value() ? absl::StrFormat("$%.2f", *cost) : "n/a";
}

std::string PageHead(const std::string& title) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>",
      HtmlEscape(title), "</title>\n<style>", kReportStyle, "</style>\n</head>\n<body>\n<h1>",
      HtmlEscape(title), "</h1>\n");
}

std::string Banners(const JudgeReport& judge) {
  std::string out;
  if (judge.simulated) {
    absl::StrAppend(&out, "<div class=\"banner simulated\">", HtmlEscape(judge.name),
                    ": SIMULATED verdicts (hb-llm-sim), not a judge's</div>\n");
  }
  if (judge.incomplete) {
    absl::StrAppend(&out, "<div class=\"banner incomplete\">", HtmlEscape(judge.name),
                    ": INCOMPLETE: interrupted, or rows failed or missing</div>\n");
  }
  return out;
}

// The chart rows: overall first, then every category.
std::vector<RangeRow> ChartRows(const std::vector<const MetaEvalView*>& views) {
  std::map<std::string, RangeRow> by_category;
  RangeRow overall;
  overall.label = "overall (score)";
  for (size_t j = 0; j < views.size(); ++j) {
    const MetaEvalView& view = *views[j];
    if (j == 0 && view.physicians.has_value()) {
      overall.low = view.physicians->min;
      overall.high = view.physicians->max;
      overall.mean = view.physicians->mean;
    }
    overall.judges.push_back(view.score);
    for (const MetaEvalCategory& c : view.categories) {
      RangeRow& row = by_category[c.name];
      row.label = c.name;
      if (!row.mean.has_value() && c.physicians.has_value()) {
        row.low = c.physicians->min;
        row.high = c.physicians->max;
        row.mean = c.physicians->mean;
      }
      row.judges.resize(views.size());
      row.judges[j] = c.model;
    }
  }
  std::vector<RangeRow> rows = {std::move(overall)};
  for (auto& [name, row] : by_category) {
    row.judges.resize(views.size());
    rows.push_back(std::move(row));
  }
  return rows;
}

constexpr char kExplainer[] =
    "<p class=\"muted\">The reference's meta-eval (simple-evals healthbench_meta_eval.py): each "
    "judge's verdict on a rubric item is compared with every physician's label of the same "
    "item (pairwise), and the balanced F1 (the mean of the positive and negative class F1) is "
    "the score. Each physician is scored the same way against the other physicians: the grey "
    "band is their spread, the tick their mean. A judge inside or above the band agrees with "
    "physicians about as well as a physician does.</p>\n";

}  // namespace

MetaEvalView MetaEvalViewOf(const MetaEvalResult& result) {
  MetaEvalView view;
  view.score = result.score;
  std::map<std::string, MetaEvalCategory> categories;
  for (const auto& [key, metric] : result.model_agreement) {
    if (std::optional<std::string> name = CategoryOf(key, kMetaEvalModelMetric)) {
      categories[*name].model = metric.value;
    }
  }
  for (const auto& [key, summary] : result.physician_summary) {
    if (key == kMetaEvalPhysicianMetric) view.physicians = summary;
    if (std::optional<std::string> name = CategoryOf(key, kMetaEvalPhysicianMetric)) {
      categories[*name].physicians = summary;
    }
  }
  for (auto& [name, category] : categories) {
    category.name = name;
    view.categories.push_back(std::move(category));
  }
  view.rows = result.rows;
  view.graded = result.graded;
  view.failed_lines = result.failed_lines;
  return view;
}

absl::StatusOr<MetaEvalView> ReadMetaEvalView(const std::string& path) {
  HB_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  const std::string context = absl::StrCat(path, ": ");
  rapidjson::Document doc;
  HB_RETURN_IF_ERROR(WithMessagePrefix(ParseJson(text, doc), context));
  if (!doc.IsObject()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, "expected a JSON object, got ", JsonTypeName(doc)));
  }
  MetaEvalView view;
  std::map<std::string, MetaEvalCategory> categories;
  auto read = [&]() -> absl::Status {
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* score, RequireJsonMember(doc, "score"));
    if (!score->IsNull()) {
      HB_ASSIGN_OR_RETURN(view.score, JsonDouble(*score, "score"));
    }
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* metrics, RequireJsonMember(doc, "metrics"));
    if (!metrics->IsObject()) return JsonTypeError("metrics", "an object", *metrics);
    for (const auto& m : metrics->GetObject()) {
      const absl::string_view key(m.name.GetString(), m.name.GetStringLength());
      if (std::optional<std::string> name = CategoryOf(key, kMetaEvalModelMetric)) {
        HB_ASSIGN_OR_RETURN(categories[*name].model,
                            JsonDouble(m.value, absl::StrCat("metrics.", key)));
      }
    }
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* summaries,
                        RequireJsonMember(doc, "physician_agreement_summary"));
    if (!summaries->IsObject()) {
      return JsonTypeError("physician_agreement_summary", "an object", *summaries);
    }
    for (const auto& m : summaries->GetObject()) {
      const std::string key(m.name.GetString(), m.name.GetStringLength());
      const std::optional<std::string> name = CategoryOf(key, kMetaEvalPhysicianMetric);
      if (key != kMetaEvalPhysicianMetric && !name.has_value()) continue;
      const std::string field = absl::StrCat("physician_agreement_summary.", key);
      if (!m.value.IsObject()) return JsonTypeError(field, "an object", m.value);
      PhysicianAgreementSummary s;
      for (auto [member, target] :
           {std::pair{"mean", &s.mean}, std::pair{"min", &s.min}, std::pair{"max", &s.max}}) {
        HB_ASSIGN_OR_RETURN(const rapidjson::Value* v, RequireJsonMember(m.value, member));
        HB_ASSIGN_OR_RETURN(*target, JsonDouble(*v, absl::StrCat(field, ".", member)));
      }
      HB_ASSIGN_OR_RETURN(const rapidjson::Value* n, RequireJsonMember(m.value, "physicians"));
      HB_ASSIGN_OR_RETURN(s.physicians, JsonInt(*n, absl::StrCat(field, ".physicians")));
      if (name.has_value()) {
        categories[*name].physicians = s;
      } else {
        view.physicians = s;
      }
    }
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* rows, RequireJsonMember(doc, "rows"));
    if (!rows->IsObject()) return JsonTypeError("rows", "an object", *rows);
    for (auto [member, target] :
         {std::pair{"selected", &view.rows}, std::pair{"graded", &view.graded}}) {
      const rapidjson::Value* v = FindJsonMember(*rows, member);
      if (v == nullptr)
        return absl::InvalidArgumentError(absl::StrCat("field 'rows.", member, "': missing"));
      HB_ASSIGN_OR_RETURN(*target, JsonInt(*v, absl::StrCat("rows.", member)));
    }
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* failed, RequireJsonMember(doc, "failed_rows"));
    if (!failed->IsArray()) return JsonTypeError("failed_rows", "an array", *failed);
    for (const rapidjson::Value& row : failed->GetArray()) {
      if (!row.IsObject()) return JsonTypeError("failed_rows[]", "an object", row);
      HB_ASSIGN_OR_RETURN(const rapidjson::Value* line, RequireJsonMember(row, "line"));
      HB_ASSIGN_OR_RETURN(const int64_t n, JsonInt(*line, "failed_rows[].line"));
      view.failed_lines.push_back(static_cast<int>(n));
    }
    return absl::OkStatus();
  };
  HB_RETURN_IF_ERROR(WithMessagePrefix(read(), context));
  for (auto& [name, category] : categories) {
    category.name = name;
    view.categories.push_back(std::move(category));
  }
  return view;
}

std::string PlaceInPhysicianRange(const std::optional<double>& model,
                                  const std::optional<PhysicianAgreementSummary>& physicians) {
  if (!model.has_value() || !physicians.has_value()) return "n/a";
  if (*model > physicians->max) return "above every physician";
  if (*model < physicians->min) return "below every physician";
  return *model >= physicians->mean ? "above the physicians' mean" : "below the physicians' mean";
}

std::optional<double> JudgeReport::CostPerThousand() const {
  if (judgements <= 0) return std::nullopt;
  return cost_usd * 1000.0 / static_cast<double>(judgements);
}

absl::Status ReadJudgeSummary(const std::string& path, JudgeReport& judge) {
  HB_ASSIGN_OR_RETURN(const std::string text, ReadFile(path));
  const std::string context = absl::StrCat(path, ": ");
  rapidjson::Document doc;
  HB_RETURN_IF_ERROR(WithMessagePrefix(ParseJson(text, doc), context));
  // The member at `dotted` path ("usage.cost_usd"), or "field '<dotted>': missing".
  auto at =
      [&](std::initializer_list<const char*> names) -> absl::StatusOr<const rapidjson::Value*> {
    const rapidjson::Value* v = &doc;
    std::string dotted;
    for (const char* name : names) {
      absl::StrAppend(&dotted, dotted.empty() ? "" : ".", name);
      v = v->IsObject() ? FindJsonMember(*v, name) : nullptr;
      if (v == nullptr)
        return absl::InvalidArgumentError(absl::StrCat("field '", dotted, "': missing"));
    }
    return v;
  };
  auto read = [&]() -> absl::Status {
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* model, at({"provenance", "grader", "model"}));
    HB_ASSIGN_OR_RETURN(judge.grader_model, JsonString(*model, "provenance.grader.model"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* dataset, at({"provenance", "dataset", "path"}));
    HB_ASSIGN_OR_RETURN(judge.dataset_path, JsonString(*dataset, "provenance.dataset.path"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* sha, at({"provenance", "dataset", "sha256"}));
    HB_ASSIGN_OR_RETURN(judge.dataset_sha256, JsonString(*sha, "provenance.dataset.sha256"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* simulated, at({"provenance", "simulated"}));
    HB_ASSIGN_OR_RETURN(judge.simulated, JsonBool(*simulated, "provenance.simulated"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* cost, at({"usage", "cost_usd"}));
    HB_ASSIGN_OR_RETURN(const double spent, JsonDouble(*cost, "usage.cost_usd"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* saved, at({"usage", "saved_usd"}));
    HB_ASSIGN_OR_RETURN(const double saved_usd, JsonDouble(*saved, "usage.saved_usd"));
    judge.cost_usd = spent + saved_usd;
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* graded, at({"counts", "graded_rows"}));
    HB_ASSIGN_OR_RETURN(judge.judgements, JsonInt(*graded, "counts.graded_rows"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* incomplete, at({"provenance", "incomplete"}));
    HB_ASSIGN_OR_RETURN(judge.incomplete, JsonBool(*incomplete, "provenance.incomplete"));
    HB_ASSIGN_OR_RETURN(const rapidjson::Value* provenance, at({"provenance"}));
    rapidjson::StringBuffer buffer;
    rapidjson::PrettyWriter<rapidjson::StringBuffer> writer(buffer);
    writer.SetIndent(' ', 2);
    provenance->Accept(writer);
    judge.provenance_json.assign(buffer.GetString(), buffer.GetSize());
    return absl::OkStatus();
  };
  return WithMessagePrefix(read(), context);
}

std::string RenderMetaEvalHtml(const JudgeReport& judge) {
  const MetaEvalView& view = judge.view;
  std::string out = PageHead(absl::StrCat("HealthBench meta-eval: ", judge.grader_model));
  absl::StrAppend(&out, Banners(judge), "<p class=\"score\">score (", kMetaEvalModelMetric,
                  "): <b>", Value(view.score), "</b> &middot; physicians ",
                  HtmlEscape(Spread(view.physicians)), "</p>\n", kExplainer);
  absl::StrAppend(&out, "<h2>Balanced F1 per category</h2>\n",
                  JudgeRangeSvg(ChartRows({&view}), {judge.grader_model}));
  absl::StrAppend(&out,
                  "<table><tr><th>category</th><th>judge</th><th>physicians min..max (mean, "
                  "n)</th><th>judge against the physicians</th></tr>\n");
  for (const MetaEvalCategory& c : view.categories) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(c.name), "</td><td class=\"num\">", Value(c.model),
                    "</td><td>", HtmlEscape(Spread(c.physicians)), "</td><td>",
                    HtmlEscape(PlaceInPhysicianRange(c.model, c.physicians)), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<h2>Rows</h2>\n<p>", view.rows, " selected, ", view.graded,
                  " graded, ", view.failed_lines.size(), " failed");
  if (!view.failed_lines.empty()) {
    absl::StrAppend(&out,
                    " <span class=\"error\">(no boolean criteria_met within the attempts; left "
                    "out, never used as a label): lines ",
                    absl::StrJoin(view.failed_lines, ", "), "</span>");
  }
  absl::StrAppend(&out, "</p>\n<h2>Provenance</h2>\n<table><tr><th>dataset</th><td>",
                  HtmlEscape(judge.dataset_path), " <span class=\"muted\">sha256 ",
                  HtmlEscape(judge.dataset_sha256), "</span></td></tr>\n<tr><th>judge</th><td>",
                  HtmlEscape(judge.grader_model),
                  "</td></tr>\n<tr><th>cost per 1,000 "
                  "judgements</th><td>",
                  Cost(judge), "</td></tr></table>\n",
                  "<p class=\"muted\">Every metric: meta_eval.json. Every verdict: "
                  "meta-eval/report.html.</p>\n</body>\n</html>\n");
  return out;
}

absl::Status WriteMetaEvalReport(const MetaEvalResult& result, JudgeReport judge,
                                 const std::string& dir) {
  judge.view = MetaEvalViewOf(result);
  std::string json = MetaEvalJson(result);
  const size_t end = json.rfind('}');
  if (!judge.provenance_json.empty() && end != std::string::npos && end > 0) {
    // Spliced in as text after the last member: the metrics keep MetaEvalJson's exact number
    // formatting.
    const size_t last = json.find_last_not_of(" \n", end - 1) + 1;
    json.replace(
        last, std::string::npos,
        absl::StrCat(",\n  \"provenance\": ",
                     absl::StrReplaceAll(judge.provenance_json, {{"\n", "\n  "}}), "\n}\n"));
  }
  HB_RETURN_IF_ERROR(WriteFileAtomically(dir + "/meta_eval.json", json));
  return WriteFileAtomically(dir + "/meta_eval.html", RenderMetaEvalHtml(judge));
}

std::string JudgeComparisonText(const std::vector<JudgeReport>& judges) {
  std::vector<std::string> lines;
  for (const JudgeReport& j : judges) {
    const MetaEvalView& v = j.view;
    int inside = 0, defined = 0;
    for (const MetaEvalCategory& c : v.categories) {
      if (!c.model.has_value() || !c.physicians.has_value()) continue;
      ++defined;
      if (*c.model >= c.physicians->min) ++inside;
    }
    lines.push_back(absl::StrCat("compare: judge ", j.name, " (", j.grader_model, "): score ",
                                 Value(v.score), ", ", PlaceInPhysicianRange(v.score, v.physicians),
                                 " (physicians ", Spread(v.physicians),
                                 "); at or above the lowest physician in ", inside, " of ", defined,
                                 " categories; cost per 1,000 judgements ", Cost(j), "; ", v.graded,
                                 " of ", v.rows, " rows graded", j.simulated ? " SIMULATED" : "",
                                 j.incomplete ? " INCOMPLETE" : "", " (", j.dir, ")"));
  }
  return absl::StrJoin(lines, "\n");
}

std::string RenderJudgeComparisonHtml(const std::vector<JudgeReport>& judges) {
  std::string out = PageHead("HealthBench meta-eval: is this judge good enough?");
  std::vector<const MetaEvalView*> views;
  std::vector<std::string> names;
  for (const JudgeReport& j : judges) {
    views.push_back(&j.view);
    names.push_back(absl::StrCat(j.name, " (", j.grader_model, ")"));
    absl::StrAppend(&out, Banners(j));
  }
  absl::StrAppend(&out, kExplainer, "<h2>Judges</h2>\n<table><tr><th>judge</th><th>model</th>",
                  "<th>score</th><th>against the physicians</th><th>cost per 1,000 "
                  "judgements</th><th>rows graded</th><th>folder</th></tr>\n");
  const MetaEvalView& first = judges.front().view;
  for (const JudgeReport& j : judges) {
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(j.name), "</td><td>", HtmlEscape(j.grader_model),
                    "</td><td class=\"num\">", Value(j.view.score), "</td><td>",
                    HtmlEscape(PlaceInPhysicianRange(j.view.score, first.physicians)),
                    "</td><td class=\"num\">", Cost(j), "</td><td class=\"num\">", j.view.graded,
                    " of ", j.view.rows, "</td><td>", HtmlEscape(j.dir), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<p>Physicians overall: ", HtmlEscape(Spread(first.physicians)),
                  "</p>\n<h2>Balanced F1 per category</h2>\n",
                  JudgeRangeSvg(ChartRows(views), names), "<table><tr><th>category</th>",
                  "<th>physicians min..max (mean, n)</th>");
  for (const JudgeReport& j : judges) {
    absl::StrAppend(&out, "<th>", HtmlEscape(j.name), "</th>");
  }
  absl::StrAppend(&out, "</tr>\n");
  const std::vector<RangeRow> rows = ChartRows(views);
  for (size_t r = 1; r < rows.size(); ++r) {
    std::optional<PhysicianAgreementSummary> physicians;
    if (rows[r].mean.has_value()) {
      physicians = PhysicianAgreementSummary{*rows[r].mean, *rows[r].low, *rows[r].high, 0};
    }
    std::string spread = "n/a";
    for (const MetaEvalCategory& c : first.categories) {
      if (c.name == rows[r].label) spread = Spread(c.physicians);
    }
    absl::StrAppend(&out, "<tr><td>", HtmlEscape(rows[r].label), "</td><td>", HtmlEscape(spread),
                    "</td>");
    for (const std::optional<double>& v : rows[r].judges) {
      absl::StrAppend(&out, "<td class=\"num\">", Value(v), " <span class=\"muted\">",
                      HtmlEscape(PlaceInPhysicianRange(v, physicians)), "</span></td>");
    }
    absl::StrAppend(&out, "</tr>\n");
  }
  absl::StrAppend(&out, "</table>\n</body>\n</html>\n");
  return out;
}

}  // namespace hb
