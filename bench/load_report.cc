#include "bench/load_report.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace hb::bench {

ProcStats ReadProc(int pid) {
  ProcStats s;
  if (pid <= 0) return s;
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stoi(line.substr(8));
    if (line.rfind("VmHWM:", 0) == 0) s.peak_rss_kb = std::stol(line.substr(6));
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stol(line.substr(6));
  }
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = all.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(all.substr(close + 2));
    std::vector<std::string> fields;
    std::string f;
    while (rest >> f) fields.push_back(f);
    // Fields after "(comm)": state is index 0; utime 11, stime 12 (man 5 proc, 14 and 15).
    if (fields.size() > 12) {
      s.cpu_seconds = (std::stod(fields[11]) + std::stod(fields[12])) / sysconf(_SC_CLK_TCK);
    }
  }
  return s;
}

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(p * static_cast<double>(values.size()));
  return values[std::min(values.size() - 1, rank)];
}

void LoadRecorder::Record(double ms, bool graded, const std::string& error) {
  absl::MutexLock lock(&mu_);
  if (!error.empty()) {
    ++errors_;
    if (first_error_.empty()) first_error_ = error;
    return;
  }
  latencies_ms_.push_back(ms);
  if (!graded) return;
  ++graded_;
  if (judge_ms_ > 0) added_ms_.push_back(ms - judge_ms_);
}

LoadRecorder::Summary LoadRecorder::Summarize() {
  absl::MutexLock lock(&mu_);
  Summary s;
  s.ok = static_cast<int64_t>(latencies_ms_.size());
  s.errors = errors_;
  s.graded = graded_;
  s.first_error = first_error_;
  s.p50_ms = Percentile(latencies_ms_, 0.5);
  s.p99_ms = Percentile(latencies_ms_, 0.99);
  s.max_ms = Percentile(latencies_ms_, 1.0);
  s.added_p50_ms = Percentile(added_ms_, 0.5);
  s.added_p99_ms = Percentile(added_ms_, 0.99);
  s.added_max_ms = Percentile(added_ms_, 1.0);
  return s;
}

}  // namespace hb::bench
