#include "orchestrator/report/progress.h"

#include <unistd.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "orchestrator/report/run_metrics.h"

namespace hb {

double EstimatedCostUsd(const ProgressSnapshot& s, const TokenPrices& prices) {
  return CostUsd({s.prompt_tokens, s.cached_tokens, s.completion_tokens}, prices);
}

std::string FormatTokenCount(int64_t tokens) {
  const double t = static_cast<double>(tokens);
  if (tokens < 1000) return absl::StrCat(tokens);
  if (tokens < 1000000) return absl::StrFormat("%.1fk", t / 1e3);
  if (tokens < 1000000000) return absl::StrFormat("%.2fM", t / 1e6);
  return absl::StrFormat("%.2fB", t / 1e9);
}

std::string FormatEta(absl::Duration d) {
  int64_t seconds = absl::ToInt64Seconds(absl::Ceil(d, absl::Seconds(1)));
  if (seconds < 0) seconds = 0;
  if (seconds < 60) return absl::StrCat(seconds, "s");
  if (seconds < 3600) return absl::StrFormat("%dm%02ds", seconds / 60, seconds % 60);
  return absl::StrFormat("%dh%02dm", seconds / 3600, (seconds % 3600) / 60);
}

std::optional<absl::Duration> EstimatedTimeLeft(const ProgressSnapshot& s) {
  const double secs = absl::ToDoubleSeconds(s.elapsed);
  if (s.done_this_run <= 0 || secs <= 0) return std::nullopt;
  const double per_second = static_cast<double>(s.done_this_run) / secs;
  const int64_t remaining = std::max<int64_t>(0, s.total_rows - s.done_rows);
  return absl::Seconds(static_cast<double>(remaining) / per_second);
}

std::string FormatProgressLine(const ProgressSnapshot& s, const TokenPrices& prices) {
  const double pct = s.total_rows > 0 ? 100.0 * static_cast<double>(s.done_rows) /
                                            static_cast<double>(s.total_rows)
                                      : 100.0;
  const double secs = absl::ToDoubleSeconds(s.elapsed);
  std::string rate = "-";
  std::string eta = "-";
  if (const std::optional<absl::Duration> left = EstimatedTimeLeft(s)) {
    rate = absl::StrFormat("%.1f", static_cast<double>(s.done_this_run) / secs);
    eta = FormatEta(*left);
  }
  std::string in_flight = absl::StrCat(s.in_flight);
  if (s.window > 0) {
    absl::StrAppend(&in_flight, " (window ", s.window);
    if (s.paced_rate > 0)
      absl::StrAppend(&in_flight, absl::StrFormat(", paced %.1f/s", s.paced_rate));
    absl::StrAppend(&in_flight, ")");
  }
  std::string line;
  if (s.sample_total > 0) {
    line = absl::StrFormat("sampled %d/%d (%d in flight) | graded ", s.sampled, s.sample_total,
                           s.sampling_in_flight);
  }
  absl::StrAppendFormat(
      &line,
      "rows %d/%d (%.1f%%) | %s rows/s | ETA %s | in flight %s | retries %d | failed %d | "
      "tokens in %s (cached %s) out %s | est. $%.2f",
      s.done_rows, s.total_rows, pct, rate, eta, in_flight, s.retries, s.failed_rows,
      FormatTokenCount(s.prompt_tokens), FormatTokenCount(s.cached_tokens),
      FormatTokenCount(s.completion_tokens), EstimatedCostUsd(s, prices));
  if (s.from_cache_rows > 0) absl::StrAppend(&line, " | from cache ", s.from_cache_rows);
  if (s.stopping) absl::StrAppend(&line, " | stopping: draining in-flight rows");
  return line;
}

bool ParseProgressMode(absl::string_view text, ProgressMode* mode, std::string* error) {
  if (text == "auto") {
    *mode = ProgressMode::kAuto;
  } else if (text == "tty") {
    *mode = ProgressMode::kTty;
  } else if (text == "log") {
    *mode = ProgressMode::kLog;
  } else if (text == "off") {
    *mode = ProgressMode::kOff;
  } else {
    *error = absl::StrCat("--progress must be auto, tty, log or off, got '", text, "'");
    return false;
  }
  return true;
}

ProgressReporter::ProgressReporter(ProgressMode mode, FILE* out, TokenPrices prices,
                                   RunMetrics* metrics)
    : mode_(mode), out_(out), prices_(prices), metrics_(metrics) {
  if (mode_ == ProgressMode::kAuto) {
    mode_ = ::isatty(::fileno(out_)) ? ProgressMode::kTty : ProgressMode::kLog;
  }
}

void ProgressReporter::Report(const ProgressSnapshot& snapshot) {
  if (metrics_ != nullptr) metrics_->Progress(snapshot);
  switch (mode_) {
    case ProgressMode::kTty:
      std::fprintf(out_, "\r%s\x1b[K", FormatProgressLine(snapshot, prices_).c_str());
      line_open_ = true;
      break;
    case ProgressMode::kLog:
      std::fprintf(out_, "progress: %s\n", FormatProgressLine(snapshot, prices_).c_str());
      break;
    case ProgressMode::kAuto:
    case ProgressMode::kOff:
      return;
  }
  std::fflush(out_);
}

void ProgressReporter::Finish() {
  if (line_open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    line_open_ = false;
  }
}

}  // namespace hb
