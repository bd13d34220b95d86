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

// summary.json (see checkpoint_report.h), indent 2, newline included.
std::string SummaryJson(const ReportContext& context, const CheckpointResult& result,
                        bool incomplete, const std::string& generated_at);

// The head of report.html: title, banners, score and metrics, cost, provenance.
HtmlReport BuildHtmlHead(const ReportContext& context, const CheckpointResult& result,
                         const std::vector<TaskState>& tasks, bool incomplete,
                         const std::string& generated_at);

}  // namespace hb::report_internal
