// Shared pieces of the load drivers (hb-grader-load, hb-env-load): what /proc says about the
// server under load, the driver's own CPU time, and latency percentiles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace hb::bench {

// A snapshot of one process from /proc/PID/status and /proc/PID/stat.
struct ProcStats {
  int threads = 0;
  // utime + stime, in seconds (clock-tick resolution, 10 ms on Linux).
  double cpu_seconds = 0;
  long peak_rss_kb = 0;
  long rss_kb = 0;
};

// Zeros when `pid` <= 0 or the process is gone.
ProcStats ReadProc(int pid);

// User + system CPU seconds of this process so far (getrusage).
double SelfCpuSeconds();

// The p-quantile (0 <= p <= 1) of `values` by nearest rank, 0 for none; sorts `values`.
double Percentile(std::vector<double>& values, double p);

// The outcomes of a driver's calls. "Added" latency is a graded call's latency minus
// `judge_ms`, the fixed latency of every judge call behind it (hb-llm-sim --latency-ms with no
// jitter): what the service, the judge client and the transports add over the slowest judge
// call of the reply. Thread-safe.
class LoadRecorder {
 public:
  explicit LoadRecorder(double judge_ms) : judge_ms_(judge_ms) {}

  // One call that took `ms`; `graded` when it was not answered from a cache; `error` is
  // empty for a success.
  void Record(double ms, bool graded, const std::string& error);

  struct Summary {
    int64_t ok = 0, errors = 0, graded = 0;
    double p50_ms = 0, p99_ms = 0, max_ms = 0;
    // Over graded successes; zero when judge_ms is 0 or nothing was graded.
    double added_p50_ms = 0, added_p99_ms = 0, added_max_ms = 0;
    std::string first_error;
  };
  Summary Summarize();

 private:
  const double judge_ms_;
  absl::Mutex mu_;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  std::vector<double> added_ms_ ABSL_GUARDED_BY(mu_);
  int64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t graded_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::bench
