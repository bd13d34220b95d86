// The checkpoint-wide parts of a checkpoint report (internal to checkpoint_report.cc):
// summary.json and the head of report.html.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/report_tasks.h"

namespace hb::report_internal {

// Bootstrap samples of every score's standard deviation and of comparison CIs.
inline constexpr int kBootstrapSamples = 1000;

// Summed over the graded rows; the token counts are those spent upstream.
struct Usage {
  int64_t attempts = 0, prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  // Rows answered from the verdict cache, and the tokens their cached gradings had cost.
  int64_t from_cache_rows = 0;
  TokenCounts saved;
  // Rows graded through the Batch API, and their part of the spent tokens.
  int64_t batch_rows = 0;
  TokenCounts batch;
  TokenCounts spent() const { return {prompt_tokens, cached_tokens, completion_tokens}; }
  void Add(const VerdictRow& row);
  // The spent tokens in dollars: the batch rows' at the batch price.
  double CostUsd(const ReportContext& context) const;
};

// summary.json (see checkpoint_report.h), indent 2, newline included.
std::string SummaryJson(const ReportContext& context, const CheckpointResult& result,
                        const Usage& usage, bool incomplete, const std::string& generated_at);

// The head of report.html: title, banners, score and metrics, cost, provenance.
HtmlReport BuildHtmlHead(const ReportContext& context, const CheckpointResult& result,
                         const Usage& usage, const std::vector<TaskState>& tasks, bool incomplete,
                         const std::string& generated_at);

}  // namespace hb::report_internal
