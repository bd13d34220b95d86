// The meta-eval's report files (`hb-orchestrator meta-eval`, SPEC §15) and the page that sets
// several judges side by side (`hb-orchestrator compare` of meta-eval folders).
//
//   meta_eval.json  MetaEvalJson(result): score, the reference's metrics, the model's and the
//                   physicians' agreement, the failed rows; and the provenance of the graded
//                   rows (the judge, its settings, the file, the tool version).
//   meta_eval.html  self-contained page: the judge's balanced F1 per category against the
//                   physicians' spread (min..max, mean), the failed rows, the provenance.
//
// A MetaEvalView is what the pages show, built from a MetaEvalResult or read back from a
// meta_eval.json. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/grading/meta_eval.h"

namespace hb {

// The folder of a meta-eval's graded rows (run's checkpoint folder) inside its output folder.
inline constexpr char kMetaEvalCheckpointFolder[] = "meta-eval";

// The metric every page shows: the reference's score, pairwise_<role>_f1_balanced.
inline constexpr char kMetaEvalModelMetric[] = "pairwise_model_f1_balanced";
inline constexpr char kMetaEvalPhysicianMetric[] = "pairwise_physician_f1_balanced";

struct MetaEvalCategory {
  std::string name;
  // The judge's balanced F1 in the category (nullopt: undefined there, e.g. no negative label).
  std::optional<double> model;
  std::optional<PhysicianAgreementSummary> physicians;
};

struct MetaEvalView {
  // Overall (the score) and its physicians' spread.
  std::optional<double> score;
  std::optional<PhysicianAgreementSummary> physicians;
  // Every category either side has the metric for, sorted by name.
  std::vector<MetaEvalCategory> categories;
  int64_t rows = 0, graded = 0;
  std::vector<int> failed_lines;
};

MetaEvalView MetaEvalViewOf(const MetaEvalResult& result);

// Reads a meta_eval.json (MetaEvalJson's document). kInvalidArgument naming the path and the
// field ("<path>: field 'rows.graded': missing"); read errors keep their code.
absl::StatusOr<MetaEvalView> ReadMetaEvalView(const std::string& path);

// Where a judge's value falls against the physicians' spread: "above every physician",
// "above the physicians' mean", "below the physicians' mean", "below every physician", or "n/a".
std::string PlaceInPhysicianRange(const std::optional<double>& model,
                                  const std::optional<PhysicianAgreementSummary>& physicians);

// One judge: a meta-eval output folder.
struct JudgeReport {
  std::string name;  // the folder's name
  std::string dir;
  std::string grader_model;
  std::string dataset_path, dataset_sha256;
  bool simulated = false;
  bool incomplete = false;
  // What its judgements cost: spent upstream plus what the verdict cache saved (the judge's
  // price, whatever was cached), over `judgements` graded rows.
  double cost_usd = 0;
  int64_t judgements = 0;
  // The graded rows' summary.json "provenance" object (dataset, grader identity and settings,
  // template, tool version, simulated, ...) as JSON text, indent 2; "" when not read.
  std::string provenance_json;
  MetaEvalView view;

  // cost_usd per 1,000 judgements; nullopt without any.
  std::optional<double> CostPerThousand() const;
};

// Fills `judge`'s grader_model, dataset, simulated, incomplete, cost_usd (usage.cost_usd +
// usage.saved_usd), judgements (counts.graded_rows) and provenance_json from the summary.json `run`
// wrote for the graded rows (OUT/meta-eval/summary.json). kInvalidArgument naming the path and the
// field.
absl::Status ReadJudgeSummary(const std::string& path, JudgeReport& judge);

// meta_eval.html of one judge.
std::string RenderMetaEvalHtml(const JudgeReport& judge);

// Writes dir/meta_eval.json (MetaEvalJson(result), plus "provenance": judge.provenance_json
// when set) and dir/meta_eval.html (for `judge`, whose
// view is taken from `result`). Write errors name the path.
absl::Status WriteMetaEvalReport(const MetaEvalResult& result, JudgeReport judge,
                                 const std::string& dir);

// The judges side by side: per category each judge's balanced F1 and where it falls in the
// physicians' range, each judge's cost per 1,000 judgements; text (the command's output) and a
// self-contained page.
std::string JudgeComparisonText(const std::vector<JudgeReport>& judges);
std::string RenderJudgeComparisonHtml(const std::vector<JudgeReport>& judges);

}  // namespace hb
