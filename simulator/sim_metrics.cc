#include "simulator/sim_metrics.h"

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace hb::sim {
namespace {

prometheus::Counter& Plain(prometheus::Registry& registry, const std::string& name,
                           const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry).Add({});
}

}  // namespace

SimMetrics::SimMetrics(const std::vector<std::string>& fault_kinds)
    : requests_(Plain(*registry_, "hb_sim_requests_total", "Chat-completions requests.")),
      responses_(prometheus::BuildCounter()
                     .Name("hb_sim_responses_total")
                     .Help("Chat-completions replies by HTTP status.")
                     .Register(*registry_)),
      faults_(prometheus::BuildCounter()
                  .Name("hb_sim_faults_total")
                  .Help("Injected faults by kind.")
                  .Register(*registry_)),
      rate_limited_(Plain(*registry_, "hb_sim_rate_limited_total", "Requests refused with 429.")),
      prompt_tokens_(Plain(*registry_, "hb_sim_prompt_tokens_total", "Estimated prompt tokens.")),
      completion_tokens_(
          Plain(*registry_, "hb_sim_completion_tokens_total", "Completion tokens returned.")),
      cached_tokens_(Plain(*registry_, "hb_sim_cached_tokens_total", "Prompt tokens cached.")),
      in_flight_(prometheus::BuildGauge()
                     .Name("hb_sim_in_flight")
                     .Help("Requests held by the server (delayed or hanging).")
                     .Register(*registry_)
                     .Add({})),
      batch_files_(Plain(*registry_, "hb_sim_batch_files_total", "Batch input files uploaded.")),
      batches_(Plain(*registry_, "hb_sim_batches_total", "Batches created.")),
      batch_requests_(
          Plain(*registry_, "hb_sim_batch_requests_total", "Request lines of created batches.")),
      batch_completed_(Plain(*registry_, "hb_sim_batch_requests_completed_total",
                             "Batch lines answered in an output file.")),
      batch_failed_(Plain(*registry_, "hb_sim_batch_requests_failed_total",
                          "Batch lines in an error file (failed, expired, invalid).")),
      batches_cancelled_(
          Plain(*registry_, "hb_sim_batches_cancelled_total", "Batches cancelled.")) {
  for (const std::string& kind : fault_kinds) faults_.Add({{"kind", kind}});
}

void SimMetrics::Response(int status) {
  if (status <= 0 || status >= 600) return;
  responses_.Add({{"status", absl::StrCat(status)}}).Increment();
}

void SimMetrics::Fault(absl::string_view kind) {
  faults_.Add({{"kind", std::string(kind)}}).Increment();
}

std::string SimMetrics::Render() const {
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace hb::sim
