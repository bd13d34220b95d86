// hb-row-latency-probe: measures the latency a grader adds to one row while it is under load.
// Sends GradeItem RPCs for the workload's rubric rows from --concurrency threads, each pausing
// --interval-ms between calls (a light sample next to the real job), and prints one CSV line per
// RPC to stdout:
//
//   start_unix_ms,rpc_ms,upstream_ms,added_ms,ok
//
// where rpc_ms is the RPC's wall time at the caller, upstream_ms the grader's own report of the
// time spent in upstream calls (GradeItemResponse.upstream_latency_ms, all attempts) and
// added_ms = rpc_ms - upstream_ms: gRPC, queueing, prompt rendering and reply parsing. Runs
// until SIGTERM or SIGINT (bench/run_scenarios.sh stops it when the job ends and keeps the
// samples taken while the job ran).
//
//   hb-row-latency-probe --target=127.0.0.1:50051 --dataset=W.jsonl --responses=R.jsonl
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/base/flags_usage.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "healthbench/grader/v1/grader.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "hb-grader address");
ABSL_FLAG(std::string, dataset, "", "HealthBench JSONL (the workload)");
ABSL_FLAG(std::string, responses, "", "responses JSONL");
ABSL_FLAG(int, concurrency, 4, "probe threads, one RPC in flight each");
ABSL_FLAG(int, interval_ms, 100, "pause between two RPCs of one thread");
ABSL_FLAG(int, timeout_s, 120, "deadline of one RPC");

namespace v1 = ::healthbench::grader::v1;

namespace hb {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

int Main() {
  absl::StatusOr<Dataset> dataset = LoadDataset(absl::GetFlag(FLAGS_dataset), {});
  if (!dataset.ok()) {
    std::fprintf(stderr, "hb-row-latency-probe: %s\n", dataset.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<ResponseSet> responses = LoadResponses(absl::GetFlag(FLAGS_responses), *dataset);
  if (!responses.ok()) {
    std::fprintf(stderr, "hb-row-latency-probe: %s\n", responses.status().ToString().c_str());
    return 2;
  }
  // One request per rubric row, in file order (the probe cycles through them).
  std::vector<v1::GradeItemRequest> requests;
  for (const Example& ex : dataset->examples) {
    const Response* r = responses->Find(ex.prompt_id);
    if (r == nullptr) continue;
    for (size_t i = 0; i < ex.rubrics.size() && requests.size() < 20000; ++i) {
      v1::GradeItemRequest req;
      if (r->system_prompt.has_value()) {
        v1::Message* m = req.add_conversation();
        m->set_role("system");
        m->set_content(*r->system_prompt);
      }
      for (const Message& msg : ex.prompt) {
        v1::Message* m = req.add_conversation();
        m->set_role(msg.role);
        m->set_content(msg.content);
      }
      req.set_reply(r->response);
      v1::RubricItem* item = req.mutable_rubric_item();
      item->set_criterion(ex.rubrics[i].criterion);
      item->set_points(ex.rubrics[i].points);
      item->set_points_text(ex.rubrics[i].points_text);
      for (const std::string& tag : ex.rubrics[i].tags) item->add_tags(tag);
      req.set_request_id(absl::StrCat("probe-", ex.prompt_id, "-", i));
      req.set_prompt_cache_key(ex.prompt_id);
      requests.push_back(std::move(req));
    }
  }
  if (requests.empty()) {
    std::fprintf(stderr, "hb-row-latency-probe: no rows\n");
    return 2;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  auto channel =
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::Grader::Stub> stub = v1::Grader::NewStub(channel);
  std::mutex out_mu;
  std::atomic<size_t> next{0};
  const int interval_ms = absl::GetFlag(FLAGS_interval_ms);
  const int timeout_s = absl::GetFlag(FLAGS_timeout_s);
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, absl::GetFlag(FLAGS_concurrency)); ++t) {
    threads.emplace_back([&] {
      while (!g_stop.load()) {
        const v1::GradeItemRequest& req = requests[next.fetch_add(1) % requests.size()];
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(timeout_s));
        v1::GradeItemResponse resp;
        const auto wall_start = std::chrono::system_clock::now();
        const auto start = std::chrono::steady_clock::now();
        const grpc::Status status = stub->GradeItem(&context, req, &resp);
        const double rpc_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        const long long start_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(wall_start.time_since_epoch())
                .count();
        {
          std::lock_guard<std::mutex> lock(out_mu);
          std::printf("%lld,%.3f,%.3f,%.3f,%d\n", start_ms, rpc_ms, resp.upstream_latency_ms(),
                      rpc_ms - resp.upstream_latency_ms(), status.ok() ? 1 : 0);
          std::fflush(stdout);
        }
        for (int slept = 0; slept < interval_ms && !g_stop.load(); slept += 10) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return 0;
}

}  // namespace
}  // namespace hb

int main(int argc, char** argv) {
  hb::ParseFlags(argc, argv,
                 "samples the latency a loaded hb-grader adds to one row (RPC wall time minus "
                 "upstream time); one CSV line per RPC");
  return hb::Main();
}
