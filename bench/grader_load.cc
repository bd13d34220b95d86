// hb-grader-load: a load driver for one hb-grader replica. Keeps --in-flight GradeItem RPCs in
// flight (async callback API, one channel) over the rubric rows of a HealthBench file, cycled
// with a fresh prompt_cache_key per pass so no two requests share a body, for --duration.
// Prints rows/s, latency percentiles and, with --server-pid, the server's threads, CPU seconds
// and peak RSS (from /proc).
//
//   hb-grader-load --target=127.0.0.1:50051 --dataset=oss_eval.jsonl --in-flight=2048
//       --duration=20s --server-pid=<pid of hb-grader>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/load_report.h"
#include "common/healthbench/dataset.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "hb-grader address");
ABSL_FLAG(std::string, dataset, "", "HealthBench JSONL whose rubric rows are graded");
ABSL_FLAG(int, in_flight, 256, "RPCs kept in flight");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(20), "How long to send after warm-up");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(2), "Warm-up before measuring");
ABSL_FLAG(int, server_pid, 0, "When set, report this process's threads, CPU and peak RSS");

namespace v1 = ::healthbench::grader::v1;

namespace {

using ::hb::bench::Percentile;
using ::hb::bench::ProcStats;
using ::hb::bench::ReadProc;

class Driver {
 public:
  Driver(std::shared_ptr<grpc::Channel> channel, std::vector<v1::GradeItemRequest> rows)
      : stub_(v1::Grader::NewStub(std::move(channel))), rows_(std::move(rows)) {}

  void Start(int in_flight) {
    for (int i = 0; i < in_flight; ++i) Launch();
  }

  // Stops launching; returns when every call in flight has finished.
  void Drain() {
    stopping_.store(true);
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &outstanding_));
  }

  void StartMeasuring() {
    absl::MutexLock lock(&mu_);
    measuring_ = true;
    ok_ = errors_ = 0;
    latencies_ms_.clear();
  }
  void StopMeasuring() {
    absl::MutexLock lock(&mu_);
    measuring_ = false;
  }

  struct Result {
    int64_t ok = 0, errors = 0;
    std::vector<double> latencies_ms;
    std::string first_error;
  };
  Result Take() {
    absl::MutexLock lock(&mu_);
    return Result{ok_, errors_, latencies_ms_, first_error_};
  }

 private:
  struct Call {
    grpc::ClientContext context;
    v1::GradeItemRequest request;
    v1::GradeItemResponse response;
    absl::Time start;
  };

  void Launch() {
    if (stopping_.load()) return;
    uint64_t n = next_.fetch_add(1);
    auto* call = new Call();
    call->request = rows_[n % rows_.size()];
    uint64_t pass = n / rows_.size();
    call->request.set_prompt_cache_key(absl::StrCat(call->request.prompt_cache_key(), "#", pass));
    call->request.set_request_id(absl::StrCat("load-", n));
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    call->start = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      ++outstanding_;
    }
    stub_->async()->GradeItem(&call->context, &call->request, &call->response,
                              [this, call](grpc::Status status) {
                                double ms = absl::ToDoubleMilliseconds(absl::Now() - call->start);
                                delete call;
                                {
                                  absl::MutexLock lock(&mu_);
                                  if (measuring_) {
                                    if (status.ok()) {
                                      ++ok_;
                                      latencies_ms_.push_back(ms);
                                    } else {
                                      ++errors_;
                                      if (first_error_.empty())
                                        first_error_ = status.error_message();
                                    }
                                  }
                                }
                                Launch();
                                absl::MutexLock lock(&mu_);
                                --outstanding_;
                              });
  }

  std::unique_ptr<v1::Grader::Stub> stub_;
  std::vector<v1::GradeItemRequest> rows_;
  std::atomic<uint64_t> next_{0};
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  bool measuring_ ABSL_GUARDED_BY(mu_) = false;
  int64_t ok_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  std::string first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "hb-grader-load: keeps --in-flight GradeItem RPCs in flight against one hb-grader and "
      "reports throughput, latency and (with --server-pid) server threads/CPU/RSS.");
  for (int i = 1; i < argc; ++i) {  // accept --in-flight as well as --in_flight
    for (char* p = argv[i] + 2; argv[i][0] == '-' && argv[i][1] == '-' && *p && *p != '='; ++p) {
      if (*p == '-') *p = '_';
    }
  }
  absl::ParseCommandLine(argc, argv);
  absl::StatusOr<hb::Dataset> dataset = hb::LoadDataset(absl::GetFlag(FLAGS_dataset), {});
  if (!dataset.ok()) {
    std::fprintf(stderr, "hb-grader-load: %s\n", dataset.status().ToString().c_str());
    return 1;
  }
  std::vector<v1::GradeItemRequest> rows;
  for (const hb::Example& example : dataset->examples) {
    for (const hb::RubricItem& item : example.rubrics) {
      v1::GradeItemRequest request;
      for (const hb::Message& m : example.prompt) {
        v1::Message* out = request.add_conversation();
        out->set_role(m.role);
        out->set_content(m.content);
      }
      request.set_reply(absl::StrCat("Synthetic load-test reply for ", example.prompt_id, "."));
      request.mutable_rubric_item()->set_criterion(item.criterion);
      request.mutable_rubric_item()->set_points(item.points);
      request.mutable_rubric_item()->set_points_text(item.points_text);
      request.set_prompt_cache_key(example.prompt_id);
      rows.push_back(std::move(request));
    }
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(absl::GetFlag(FLAGS_target),
                                           grpc::InsecureChannelCredentials(), args);
  const int pid = absl::GetFlag(FLAGS_server_pid);
  Driver driver(channel, rows);
  driver.Start(absl::GetFlag(FLAGS_in_flight));
  absl::SleepFor(absl::GetFlag(FLAGS_warmup));  // a load generator's pacing, not synchronisation
  ProcStats before = ReadProc(pid);
  driver.StartMeasuring();
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::GetFlag(FLAGS_duration));
  driver.StopMeasuring();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ProcStats after = ReadProc(pid);
  Driver::Result result = driver.Take();
  driver.Drain();
  std::printf(
      "rows_per_s=%.1f ok=%lld errors=%lld in_flight=%d seconds=%.1f p50_ms=%.1f p99_ms=%.1f",
      static_cast<double>(result.ok) / seconds, static_cast<long long>(result.ok),
      static_cast<long long>(result.errors), absl::GetFlag(FLAGS_in_flight), seconds,
      Percentile(result.latencies_ms, 0.5), Percentile(result.latencies_ms, 0.99));
  if (pid > 0) {
    std::printf(
        " server_threads=%d server_cpu_s=%.2f server_cpu_per_row_ms=%.3f "
        "server_rss_mb=%.1f server_peak_rss_mb=%.1f",
        after.threads, after.cpu_seconds - before.cpu_seconds,
        result.ok > 0 ? 1000 * (after.cpu_seconds - before.cpu_seconds) / result.ok : 0,
        after.rss_kb / 1024.0, after.peak_rss_kb / 1024.0);
  }
  std::printf("\n");
  if (!result.first_error.empty()) std::printf("first_error=%s\n", result.first_error.c_str());
  return result.errors == 0 ? 0 : 1;
}
