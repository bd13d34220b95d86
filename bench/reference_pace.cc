// hb-reference-pace: drives an OpenAI-compatible endpoint (normally hb-llm-sim) the way the
// reference (simple-evals healthbench_eval.py, SPEC §6 and §11) drives the grader, so the
// pipeline's gain can be measured side by side against the same simulator settings:
//
//   * an outer pool of --outer-threads (120) workers, one task at a time each;
//   * per task, a new inner pool of min(CPU count, rubric items) threads grading its rubric
//     items, one blocking HTTP call per item (libcurl easy handles, kept alive and shared
//     through a pool, as the OpenAI SDK's httpx client shares its connections);
//   * no adaptation and no global limit: errors (429, 5xx, transport) sleep 2^trial seconds
//     (1, 2, 4, ...; no jitter) and retry; an unparsable reply is retried at once.
//
// Deviation, for a benchmark that must end: a row gives up after --max-attempts attempts (the
// reference retries forever) and a 400 fails the row (the reference would loop on it).
//
// Prints one JSON line: rows, seconds, rows_per_s, requests, errors, mean latency, the largest
// number of calls in flight, and this process's CPU seconds and peak RSS.
//
//   hb-reference-pace --base-url=http://127.0.0.1:8080/v1 --dataset=W.jsonl --responses=R.jsonl
//       --grader-template=data/grader_template.txt
#include <curl/curl.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/flags_usage.h"
#include "common/grading/grader_reply.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "rapidjson/document.h"

ABSL_FLAG(std::string, base_url, "http://127.0.0.1:8080/v1",
          "OpenAI-compatible base URL; requests go to {base}/chat/completions");
ABSL_FLAG(std::string, dataset, "", "HealthBench JSONL (the workload)");
ABSL_FLAG(std::string, responses, "", "responses JSONL (one reply per task)");
ABSL_FLAG(std::string, grader_template, "data/grader_template.txt", "grader prompt template");
ABSL_FLAG(int, outer_threads, 120, "outer pool size (the reference's n_threads)");
ABSL_FLAG(int, inner_threads, 0, "inner pool size per task; 0 = CPU count (the reference)");
ABSL_FLAG(int, max_attempts, 20, "give a row up after this many attempts (reference: never)");
ABSL_FLAG(double, timeout_s, 600, "per-request timeout in seconds");

namespace hb {
namespace {

using Clock = std::chrono::steady_clock;

// Connection reuse across threads: easy handles keep their connection alive between uses.
class HandlePool {
 public:
  ~HandlePool() {
    for (CURL* h : free_) curl_easy_cleanup(h);
  }
  CURL* Get() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        CURL* h = free_.back();
        free_.pop_back();
        return h;
      }
    }
    return curl_easy_init();
  }
  void Put(CURL* h) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(h);
  }

 private:
  std::mutex mu_;
  std::vector<CURL*> free_;
};

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

struct Stats {
  std::atomic<int64_t> rows{0};
  std::atomic<int64_t> failed_rows{0};
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> http_errors{0};
  std::atomic<int64_t> transport_errors{0};
  std::atomic<int64_t> parse_retries{0};
  std::atomic<int64_t> latency_us_total{0};
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
};

struct Job {
  const Dataset* dataset;
  const ResponseSet* responses;
  const GraderTemplate* tmpl;
  GraderSettings settings;
  std::string url;
  int inner_threads;
  int max_attempts;
  long timeout_ms;
  HandlePool* pool;
  Stats* stats;
};

// One rubric item, graded the reference's way. Returns true when a verdict was parsed.
bool GradeItem(const Job& job, const std::string& body) {
  int trial = 0;
  for (int attempt = 1; attempt <= job.max_attempts; ++attempt) {
    CURL* h = job.pool->Get();
    std::string reply;
    curl_easy_setopt(h, CURLOPT_URL, job.url.c_str());
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &AppendBody);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, job.timeout_ms);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    const int now = job.stats->in_flight.fetch_add(1) + 1;
    int seen = job.stats->max_in_flight.load();
    while (now > seen && !job.stats->max_in_flight.compare_exchange_weak(seen, now)) {
    }
    const auto start = Clock::now();
    const CURLcode rc = curl_easy_perform(h);
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    job.stats->in_flight.fetch_sub(1);
    job.stats->requests.fetch_add(1);
    job.stats->latency_us_total.fetch_add(us);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    job.pool->Put(h);

    if (rc != CURLE_OK || status != 200) {
      if (rc != CURLE_OK) {
        job.stats->transport_errors.fetch_add(1);
      } else {
        job.stats->http_errors.fetch_add(1);
      }
      if (rc == CURLE_OK && status == 400) return false;  // the reference would loop forever
      // SPEC §6: sleep 2**trial seconds, no cap, no jitter.
      std::this_thread::sleep_for(std::chrono::seconds(1LL << std::min(trial, 20)));
      ++trial;
      continue;
    }
    rapidjson::Document doc;
    doc.Parse(reply.data(), reply.size());
    std::optional<std::string> content;
    if (!doc.HasParseError() && doc.IsObject() && doc.HasMember("choices") &&
        doc["choices"].IsArray() && !doc["choices"].Empty()) {
      const rapidjson::Value& choice = doc["choices"][0];
      if (choice.IsObject() && choice.HasMember("message") && choice["message"].IsObject() &&
          choice["message"].HasMember("content") && choice["message"]["content"].IsString()) {
        content = std::string(choice["message"]["content"].GetString(),
                              choice["message"]["content"].GetStringLength());
      }
    }
    if (!content.has_value()) {  // null content: an exception in the reference, backed off
      job.stats->http_errors.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::seconds(1LL << std::min(trial, 20)));
      ++trial;
      continue;
    }
    if (ParseGraderReply(*content).ok()) return true;
    job.stats->parse_retries.fetch_add(1);  // SPEC §5.2: retried at once
  }
  return false;
}

void GradeTask(const Job& job, const Example& example, const Response& response) {
  const std::string conversation = RenderConversation(
      GradedConversation(example.prompt, response.system_prompt, response.response));
  const size_t n = example.rubrics.size();
  std::atomic<size_t> next{0};
  auto inner = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      const std::string prompt = job.tmpl->Fill(conversation, RenderRubricItem(example.rubrics[i]));
      const std::string body = BuildChatCompletionBody(job.settings, prompt);
      if (GradeItem(job, body)) {
        job.stats->rows.fetch_add(1);
      } else {
        job.stats->failed_rows.fetch_add(1);
      }
    }
  };
  const size_t threads = std::min<size_t>(static_cast<size_t>(job.inner_threads), n);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(inner);
  for (std::thread& t : pool) t.join();
}

int Main() {
  absl::StatusOr<Dataset> dataset = LoadDataset(absl::GetFlag(FLAGS_dataset), {});
  if (!dataset.ok()) {
    std::fprintf(stderr, "hb-reference-pace: %s\n", dataset.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<ResponseSet> responses = LoadResponses(absl::GetFlag(FLAGS_responses), *dataset);
  if (!responses.ok()) {
    std::fprintf(stderr, "hb-reference-pace: %s\n", responses.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<GraderTemplate> tmpl = GraderTemplate::Load(absl::GetFlag(FLAGS_grader_template));
  if (!tmpl.ok()) {
    std::fprintf(stderr, "hb-reference-pace: %s\n", tmpl.status().ToString().c_str());
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  HandlePool pool;
  Stats stats;
  Job job{&*dataset,
          &*responses,
          &*tmpl,
          GraderSettings{},
          absl::StrCat(absl::GetFlag(FLAGS_base_url), "/chat/completions"),
          absl::GetFlag(FLAGS_inner_threads) > 0
              ? absl::GetFlag(FLAGS_inner_threads)
              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
          std::max(1, absl::GetFlag(FLAGS_max_attempts)),
          static_cast<long>(absl::GetFlag(FLAGS_timeout_s) * 1000),
          &pool,
          &stats};

  // Tasks with a response, in file order (imap over the examples).
  std::vector<std::pair<const Example*, const Response*>> tasks;
  for (const Example& ex : dataset->examples) {
    if (const Response* r = responses->Find(ex.prompt_id); r != nullptr) tasks.emplace_back(&ex, r);
  }
  int64_t total_rows = 0;
  for (const auto& t : tasks) total_rows += static_cast<int64_t>(t.first->rubrics.size());

  const size_t outer = std::min<size_t>(
      static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_outer_threads))), tasks.size());
  std::atomic<size_t> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> workers;
  for (size_t w = 0; w < outer; ++w) {
    workers.emplace_back([&] {
      for (size_t t = next.fetch_add(1); t < tasks.size(); t = next.fetch_add(1)) {
        GradeTask(job, *tasks[t].first, *tasks[t].second);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();

  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  const int64_t requests = stats.requests.load();
  std::printf(
      "{\"driver\":\"reference-pace\",\"tasks\":%zu,\"rows_total\":%lld,\"rows\":%lld,"
      "\"failed_rows\":%lld,\"seconds\":%.3f,\"rows_per_s\":%.2f,\"requests\":%lld,"
      "\"http_errors\":%lld,\"transport_errors\":%lld,\"parse_retries\":%lld,"
      "\"mean_latency_ms\":%.2f,\"max_in_flight\":%d,\"outer_threads\":%zu,"
      "\"inner_threads\":%d,\"cpu_s\":%.3f,\"peak_rss_kb\":%ld}\n",
      tasks.size(), static_cast<long long>(total_rows), static_cast<long long>(stats.rows.load()),
      static_cast<long long>(stats.failed_rows.load()), seconds,
      static_cast<double>(stats.rows.load()) / seconds, static_cast<long long>(requests),
      static_cast<long long>(stats.http_errors.load()),
      static_cast<long long>(stats.transport_errors.load()),
      static_cast<long long>(stats.parse_retries.load()),
      requests > 0 ? static_cast<double>(stats.latency_us_total.load()) / requests / 1000.0 : 0.0,
      stats.max_in_flight.load(), outer, job.inner_threads, cpu, usage.ru_maxrss);
  curl_global_cleanup();
  return stats.failed_rows.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hb

int main(int argc, char** argv) {
  hb::ParseFlags(argc, argv,
                 "drives an OpenAI-compatible endpoint with the reference's concurrency (120 "
                 "task workers x min(CPUs, items) blocking calls, 2^k s backoff) and prints "
                 "rows/s as JSON");
  return hb::Main();
}
