// hb-env-load: a load driver for hb-env. Sends --submissions Submit RPCs over gRPC with
// --in-flight outstanding at once (async callback API, one channel), cycling the first --tasks
// tasks of --split; every reply is unique (graded) unless --same-reply (answered from the
// cache after the first grading of each task). Prints submissions/s, latency percentiles and,
// with --server-pid, the server's peak RSS.
//
//   hb-env-load --target=127.0.0.1:50061 --split=test --in-flight=200 --submissions=2000
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "healthbench/env/v1/env.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50061", "hb-env gRPC address");
ABSL_FLAG(std::string, split, "test", "Split whose tasks are submitted");
ABSL_FLAG(int, tasks, 30, "Distinct tasks cycled (the split's first N)");
ABSL_FLAG(int, in_flight, 200, "Submit RPCs kept in flight");
ABSL_FLAG(int, submissions, 1000, "Submit RPCs in total");
ABSL_FLAG(bool, same_reply, false, "Submit the same reply per task (cache hits after the first)");
ABSL_FLAG(int, server_pid, 0, "When set, report this process's peak RSS (VmHWM)");

namespace env_v1 = ::healthbench::env::v1;

namespace {

long PeakRssKb(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

class Driver {
 public:
  Driver(std::unique_ptr<env_v1::Environment::Stub> stub, std::vector<std::string> tasks, int total,
         bool same_reply)
      : stub_(std::move(stub)), tasks_(std::move(tasks)), total_(total), same_(same_reply) {}

  void Run(int in_flight) {
    for (int i = 0; i < in_flight; ++i) Launch();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](Driver* d) { return d->finished_ == d->total_; }, this));
  }

  std::vector<double> latencies_ms;
  int64_t ok = 0, errors = 0, from_cache = 0;
  std::string first_error;

 private:
  struct Call {
    grpc::ClientContext context;
    env_v1::SubmitRequest request;
    env_v1::SubmitResponse response;
    absl::Time start;
  };

  void Launch() {
    const int n = next_.fetch_add(1);
    if (n >= total_) return;
    auto* call = new Call;
    const std::string& task = tasks_[n % tasks_.size()];
    call->request.mutable_task()->set_task_id(task);
    call->request.set_reply(same_ ? std::string("A steady bench reply.")
                                  : absl::StrCat("Bench reply number ", n, "."));
    call->start = absl::Now();
    stub_->async()->Submit(&call->context, &call->request, &call->response,
                           [this, call](grpc::Status status) { Done(call, status); });
  }

  void Done(Call* call, const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - call->start));
      if (status.ok()) {
        ++ok;
        from_cache += call->response.from_cache() ? 1 : 0;
      } else {
        ++errors;
        if (first_error.empty()) first_error = status.error_message();
      }
      ++finished_;
    }
    delete call;
    Launch();
  }

  std::unique_ptr<env_v1::Environment::Stub> stub_;
  const std::vector<std::string> tasks_;
  const int total_;
  const bool same_;
  std::atomic<int> next_{0};
  absl::Mutex mu_;
  int finished_ = 0;
};

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("hb-env-load: a load driver for hb-env (see bench/env_load.cc)");
  absl::ParseCommandLine(argc, argv);
  auto channel =
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials());
  auto stub = env_v1::Environment::NewStub(channel);
  env_v1::ListTasksRequest list;
  list.set_split(absl::GetFlag(FLAGS_split));
  list.set_stop(absl::GetFlag(FLAGS_tasks));
  env_v1::ListTasksResponse listed;
  grpc::ClientContext context;
  grpc::Status status = stub->ListTasks(&context, list, &listed);
  if (!status.ok() || listed.tasks_size() == 0) {
    std::fprintf(stderr, "ListTasks: %s\n", status.error_message().c_str());
    return 1;
  }
  std::vector<std::string> tasks;
  for (const auto& task : listed.tasks()) tasks.push_back(task.task_id());
  Driver driver(std::move(stub), tasks, absl::GetFlag(FLAGS_submissions),
                absl::GetFlag(FLAGS_same_reply));
  const absl::Time start = absl::Now();
  driver.Run(absl::GetFlag(FLAGS_in_flight));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf(
      "submissions=%lld ok=%lld errors=%lld from_cache=%lld seconds=%.2f per_second=%.1f "
      "p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
      static_cast<long long>(driver.ok + driver.errors), static_cast<long long>(driver.ok),
      static_cast<long long>(driver.errors), static_cast<long long>(driver.from_cache), seconds,
      static_cast<double>(driver.ok) / seconds, Percentile(driver.latencies_ms, 0.5),
      Percentile(driver.latencies_ms, 0.99), Percentile(driver.latencies_ms, 1.0));
  if (!driver.first_error.empty()) std::printf("first error: %s\n", driver.first_error.c_str());
  if (const int pid = absl::GetFlag(FLAGS_server_pid); pid > 0) {
    std::printf("server_peak_rss_mb=%.1f\n", static_cast<double>(PeakRssKb(pid)) / 1024.0);
  }
  return 0;
}
