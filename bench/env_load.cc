// hb-env-load: a load driver for hb-env. Sends --submissions replies with --in-flight
// outstanding at once (or --rate calls per second, one at a time: a trainer's fixed pace),
// cycling the first --tasks tasks of --split, over gRPC (--mode=grpc: async Submit on
// --channels channels), over the Open Reward Standard HTTP API (--mode=ors: one keep-alive
// connection and session per call in flight, POST /{env}/call), or over a trainer route
// (--mode=get_reward|reward|verify: one sample per request in the trainer's shape, one
// keep-alive connection per call in flight; see env_load_ors.h). Every reply is unique (graded;
// --reply-tag makes them differ from another run's) unless --same-reply: then each task is
// graded once before the clock starts and every measured call is a cache hit. --warmup calls
// are made (and not measured) first.
//
// Prints calls/s, latency percentiles, the latency added over the judge's fixed
// --judge-latency-ms (graded calls), CPU microseconds per call of the server (--server-pid,
// from /proc), of the judge (--judge-pid) and of this driver, the server's peak RSS, and the
// load average (the machine may be shared: CPU per call is the figure that load does not
// inflate much, calls/s is not). With --rate a call that starts late (the one before it was
// still running) is timed from its own start, not from its scheduled one.
//
//   hb-env-load --target=127.0.0.1:50061 --split=test --in-flight=200 --submissions=2000
//   hb-env-load --mode=ors --http-target=127.0.0.1:8080 --same-reply --submissions=30000
//   hb-env-load --mode=get_reward --in-flight=1 --rate=2 --submissions=120 --reply-tag=" (b)"
#include <cstdio>
#include <fstream>
#include <functional>
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
#include "bench/env_load_ors.h"
#include "bench/load_report.h"
#include "common/base/host_port.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "healthbench/env/v1/env.grpc.pb.h"

ABSL_FLAG(std::string, mode, "grpc",
          "grpc (Submit), ors (POST /{env}/call over HTTP), or a trainer route over HTTP: "
          "get_reward (OpenRLHF), reward (slime), verify (NeMo-Gym)");
ABSL_FLAG(std::string, target, "127.0.0.1:50061", "hb-env gRPC address (tasks are listed here)");
ABSL_FLAG(std::string, http_target, "127.0.0.1:8080",
          "hb-env HTTP address (--mode=ors and the trainer routes)");
ABSL_FLAG(std::string, split, "test", "Split whose tasks are submitted");
ABSL_FLAG(int, tasks, 30, "Distinct tasks cycled (the split's first N)");
ABSL_FLAG(int, in_flight, 200, "Calls kept in flight");
ABSL_FLAG(int, submissions, 1000, "Calls measured in total");
ABSL_FLAG(double, rate, 0,
          "Calls started per second, one at a time (a trainer's fixed pace: call i starts at "
          "i / rate s, or as soon as call i - 1 ends when that is later); 0: --in_flight kept "
          "in flight");
ABSL_FLAG(std::string, calls_out, "",
          "With --rate: write one line per measured call there, \"INDEX TASK_ID MS\" (which "
          "tasks were slow)");
ABSL_FLAG(int, channels, 1, "gRPC channels (own connections) the calls are spread over");
ABSL_FLAG(bool, same_reply, false, "Submit the same reply per task (cache hits after warm-up)");
ABSL_FLAG(std::string, reply_tag, "",
          "Added to every unique reply, so that another run against the same server (its "
          "verdict cache) grades again instead of hitting the cache");
ABSL_FLAG(int, warmup, 0,
          "Calls made (at --in-flight) before measuring: the server's connections to the judge "
          "and its heap reach their steady state (with --same-reply each task is graded once "
          "first anyway)");
ABSL_FLAG(double, judge_latency_ms, 0,
          "The judge's fixed latency (hb-llm-sim --latency-ms, no jitter); when set, prints the "
          "latency graded calls add over it");
ABSL_FLAG(int, server_pid, 0, "When set, report this process's CPU per call and peak RSS");
ABSL_FLAG(int, judge_pid, 0, "When set, report this process's (hb-llm-sim's) CPU per call");

namespace env_v1 = ::healthbench::env::v1;
using ::hb::bench::LoadRecorder;

namespace {

using ReplyFn = std::function<std::string(int64_t)>;

class GrpcDriver {
 public:
  GrpcDriver(const std::string& target, int channels, std::vector<std::string> tasks)
      : tasks_(std::move(tasks)) {
    for (int i = 0; i < std::max(1, channels); ++i) {
      grpc::ChannelArguments args;
      args.SetInt("hb.env_load.channel", i);  // distinct arguments: a connection of its own
      stubs_.push_back(env_v1::Environment::NewStub(
          grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
    }
  }

  // `count` calls, `in_flight` at once; returns when all have finished.
  void Run(int count, int in_flight, const ReplyFn& reply, LoadRecorder& recorder) {
    {
      absl::MutexLock lock(&mu_);
      reply_ = &reply;
      recorder_ = &recorder;
      stop_ = next_ + count;
    }
    for (int i = 0; i < in_flight; ++i) Launch();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &GrpcDriver::AllFinished));
  }

 private:
  bool AllFinished() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return finished_ == stop_; }

  struct Call {
    grpc::ClientContext context;
    env_v1::SubmitRequest request;
    env_v1::SubmitResponse response;
    absl::Time start;
  };

  void Launch() {
    int64_t n = 0;
    {
      absl::MutexLock lock(&mu_);
      if (next_ >= stop_) return;
      n = next_++;
    }
    auto* call = new Call;
    call->request.mutable_task()->set_task_id(tasks_[n % tasks_.size()]);
    call->request.set_reply((*reply_)(n));
    call->start = absl::Now();
    stubs_[n % stubs_.size()]->async()->Submit(
        &call->context, &call->request, &call->response,
        [this, call](grpc::Status status) { Done(call, status); });
  }

  void Done(Call* call, const grpc::Status& status) {
    recorder_->Record(absl::ToDoubleMilliseconds(absl::Now() - call->start),
                      !call->response.from_cache(), status.ok() ? "" : status.error_message());
    delete call;
    {
      absl::MutexLock lock(&mu_);
      ++finished_;
    }
    Launch();
  }

  std::vector<std::unique_ptr<env_v1::Environment::Stub>> stubs_;
  const std::vector<std::string> tasks_;
  absl::Mutex mu_;
  const ReplyFn* reply_ = nullptr;
  LoadRecorder* recorder_ = nullptr;
  int64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stop_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
};

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return absl::StrCat(one, "/", five, "/", fifteen);
}

std::vector<std::string> ListTaskIds() {
  auto stub = env_v1::Environment::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials()));
  env_v1::ListTasksRequest list;
  list.set_split(absl::GetFlag(FLAGS_split));
  list.set_stop(absl::GetFlag(FLAGS_tasks));
  env_v1::ListTasksResponse listed;
  grpc::ClientContext context;
  grpc::Status status = stub->ListTasks(&context, list, &listed);
  std::vector<std::string> tasks;
  if (!status.ok()) {
    std::fprintf(stderr, "ListTasks on %s: %s\n", absl::GetFlag(FLAGS_target).c_str(),
                 status.error_message().c_str());
    return tasks;
  }
  for (const auto& task : listed.tasks()) tasks.push_back(task.task_id());
  return tasks;
}

// The driver of --mode as one function: Run(count, in_flight, reply, recorder).
using RunFn = std::function<void(int, int, const ReplyFn&, LoadRecorder&)>;

RunFn MakeDriver(const std::vector<std::string>& tasks) {
  if (absl::GetFlag(FLAGS_mode) == "grpc") {
    auto driver = std::make_shared<GrpcDriver>(absl::GetFlag(FLAGS_target),
                                               absl::GetFlag(FLAGS_channels), tasks);
    return [driver](int count, int in_flight, const ReplyFn& reply, LoadRecorder& recorder) {
      driver->Run(count, in_flight, reply, recorder);
    };
  }
  hb::bench::OrsLoadOptions options;
  hb::HostPortRules rules;
  rules.name = "--http_target";
  absl::StatusOr<hb::HostPort> target = hb::ParseHostPort(absl::GetFlag(FLAGS_http_target), rules);
  if (!target.ok()) {
    std::fprintf(stderr, "%s\n", target.status().ToString().c_str());
    return nullptr;
  }
  options.host = target->host;
  options.port = target->port;
  options.connections = absl::GetFlag(FLAGS_in_flight);
  options.task_ids = tasks;
  options.route = absl::GetFlag(FLAGS_mode);
  options.graded = !absl::GetFlag(FLAGS_same_reply);
  auto connected = hb::bench::OrsLoadDriver::Connect(options);
  if (!connected.ok()) {
    std::fprintf(stderr, "%s\n", connected.status().ToString().c_str());
    return nullptr;
  }
  std::shared_ptr<hb::bench::OrsLoadDriver> driver = *std::move(connected);
  return [driver](int count, int in_flight, const ReplyFn& reply, LoadRecorder& recorder) {
    driver->Run(count, in_flight, reply, recorder);
  };
}

// `count` calls of `run` one at a time, call i starting at i / `rate` seconds from now (later
// only when call i - 1 ends after that), so that the pace is the trainer's and not the server's.
// With --calls_out, each call's task and latency go to that file.
void RunPaced(const RunFn& run, int count, double rate, const std::vector<std::string>& tasks,
              const ReplyFn& reply, LoadRecorder& recorder) {
  std::string lines;
  const absl::Time start = absl::Now();
  for (int i = 0; i < count; ++i) {
    absl::SleepFor(start + absl::Seconds(i / rate) - absl::Now());
    const absl::Time begin = absl::Now();
    run(1, 1, reply, recorder);
    absl::StrAppend(&lines, i, " ", tasks[i % tasks.size()], " ",
                    absl::ToDoubleMilliseconds(absl::Now() - begin), "\n");
  }
  if (const std::string path = absl::GetFlag(FLAGS_calls_out); !path.empty()) {
    std::ofstream(path) << lines;
  }
}

// CPU seconds each process spent over the measured calls.
struct CpuSpent {
  double server = 0, judge = 0, client = 0;
};

void Print(LoadRecorder::Summary s, double seconds, CpuSpent cpu,
           const hb::bench::ProcStats& server, const std::string& load_before) {
  const double calls = static_cast<double>(s.ok + s.errors);
  std::printf(
      "mode=%s submissions=%lld ok=%lld errors=%lld graded=%lld seconds=%.2f per_second=%.1f "
      "p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
      absl::GetFlag(FLAGS_mode).c_str(), static_cast<long long>(s.ok + s.errors),
      static_cast<long long>(s.ok), static_cast<long long>(s.errors),
      static_cast<long long>(s.graded), seconds, static_cast<double>(s.ok) / seconds, s.p50_ms,
      s.p99_ms, s.max_ms);
  if (absl::GetFlag(FLAGS_judge_latency_ms) > 0 && s.graded > 0) {
    std::printf("added_over_judge_ms p50=%.1f p99=%.1f max=%.1f (graded calls)\n", s.added_p50_ms,
                s.added_p99_ms, s.added_max_ms);
  }
  std::printf("client_cpu_us_per_call=%.1f", cpu.client * 1e6 / calls);
  if (absl::GetFlag(FLAGS_server_pid) > 0) {
    std::printf(
        " server_cpu_s=%.2f server_cpu_us_per_call=%.1f server_threads=%d "
        "server_peak_rss_mb=%.1f",
        cpu.server, cpu.server * 1e6 / calls, server.threads,
        static_cast<double>(server.peak_rss_kb) / 1024.0);
  }
  if (absl::GetFlag(FLAGS_judge_pid) > 0) {
    std::printf(" judge_cpu_us_per_call=%.1f", cpu.judge * 1e6 / calls);
  }
  std::printf(" loadavg_before=%s loadavg_after=%s\n", load_before.c_str(), LoadAverage().c_str());
  if (!s.first_error.empty()) std::printf("first error: %s\n", s.first_error.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("hb-env-load: a load driver for hb-env (see bench/env_load.cc)");
  absl::ParseCommandLine(argc, argv);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "grpc" && mode != "ors" && mode != "get_reward" && mode != "reward" &&
      mode != "verify") {
    std::fprintf(stderr, "--mode must be grpc, ors, get_reward, reward or verify, got '%s'\n",
                 mode.c_str());
    return 2;
  }
  const std::vector<std::string> tasks = ListTaskIds();
  if (tasks.empty()) return 1;
  RunFn run = MakeDriver(tasks);
  if (!run) return 1;
  const bool same = absl::GetFlag(FLAGS_same_reply);
  const std::string tag = absl::GetFlag(FLAGS_reply_tag);
  const ReplyFn reply = [same, tag](int64_t n) {
    return same ? std::string("A steady bench reply.")
                : absl::StrCat("Bench reply number ", n, tag, ".");
  };
  LoadRecorder warm(0);
  if (same) {  // grade each task once, so that every measured call is a cache hit
    run(static_cast<int>(tasks.size()), static_cast<int>(tasks.size()), reply, warm);
  }
  if (const int warmup = absl::GetFlag(FLAGS_warmup); warmup > 0) {
    run(warmup, absl::GetFlag(FLAGS_in_flight), reply, warm);
  }
  const int pid = absl::GetFlag(FLAGS_server_pid);
  const std::string load_before = LoadAverage();
  const int judge_pid = absl::GetFlag(FLAGS_judge_pid);
  const hb::bench::ProcStats before = hb::bench::ReadProc(pid);
  const hb::bench::ProcStats judge_before = hb::bench::ReadProc(judge_pid);
  const double client_before = hb::bench::SelfCpuSeconds();
  LoadRecorder recorder(absl::GetFlag(FLAGS_judge_latency_ms));
  const absl::Time start = absl::Now();
  if (const double rate = absl::GetFlag(FLAGS_rate); rate > 0) {
    RunPaced(run, absl::GetFlag(FLAGS_submissions), rate, tasks, reply, recorder);
  } else {
    run(absl::GetFlag(FLAGS_submissions), absl::GetFlag(FLAGS_in_flight), reply, recorder);
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const hb::bench::ProcStats after = hb::bench::ReadProc(pid);
  const CpuSpent cpu{after.cpu_seconds - before.cpu_seconds,
                     hb::bench::ReadProc(judge_pid).cpu_seconds - judge_before.cpu_seconds,
                     hb::bench::SelfCpuSeconds() - client_before};
  Print(recorder.Summarize(), seconds, cpu, after, load_before);
  return 0;
}
