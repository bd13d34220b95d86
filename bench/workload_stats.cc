// hb-workload-stats: what a grading run sends, computed offline from the workload with the
// project's own rendering (the exact request bodies hb-grader builds):
//
//   * request bodies and bytes per full run (one request per rubric row, no retries);
//   * prompt tokens, estimated as the simulator does (ceil(bytes of all message contents / 4));
//   * how much of each request's prompt is identical to the previous request of the same task
//     (same conversation and reply, next rubric item), in bytes and as a share of the prompt;
//   * the tokens an OpenAI-style prefix cache could serve in a task's rubric order (128-token
//     blocks, prompts of at least 1,024 tokens, as hb-llm-sim models it).
//
// Prints one JSON line.
//
//   hb-workload-stats --dataset=W.jsonl --responses=R.jsonl --grader-template=T
//       [--dump-bodies=B.txt --dump-limit=2000]
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "common/base/flags_usage.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"

ABSL_FLAG(std::string, dataset, "", "HealthBench JSONL (the workload)");
ABSL_FLAG(std::string, responses, "", "responses JSONL");
ABSL_FLAG(std::string, grader_template, "data/grader_template.txt", "grader prompt template");
ABSL_FLAG(std::string, dump_bodies, "",
          "also write the first --dump-limit request bodies here, one per line (for wrk)");
ABSL_FLAG(int, dump_limit, 2000, "how many bodies --dump-bodies writes");

namespace hb {
namespace {

size_t CommonPrefix(const std::string& a, const std::string& b) {
  const size_t n = std::min(a.size(), b.size());
  return static_cast<size_t>(
      std::mismatch(a.begin(), a.begin() + static_cast<long>(n), b.begin()).first - a.begin());
}

int64_t Tokens(size_t bytes) { return static_cast<int64_t>((bytes + 3) / 4); }

// hb-llm-sim's cache rule: whole 512-byte blocks, counted only from 8 blocks (1,024 tokens).
int64_t CacheableTokens(size_t shared_bytes) {
  const int64_t blocks = static_cast<int64_t>(shared_bytes / 512);
  return blocks >= 8 ? blocks * 128 : 0;
}

int Main() {
  absl::StatusOr<Dataset> dataset = LoadDataset(absl::GetFlag(FLAGS_dataset), {});
  if (!dataset.ok()) {
    std::fprintf(stderr, "hb-workload-stats: %s\n", dataset.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<ResponseSet> responses = LoadResponses(absl::GetFlag(FLAGS_responses), *dataset);
  if (!responses.ok()) {
    std::fprintf(stderr, "hb-workload-stats: %s\n", responses.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<GraderTemplate> tmpl = GraderTemplate::Load(absl::GetFlag(FLAGS_grader_template));
  if (!tmpl.ok()) {
    std::fprintf(stderr, "hb-workload-stats: %s\n", tmpl.status().ToString().c_str());
    return 2;
  }
  const GraderSettings settings;
  FILE* dump = nullptr;
  const std::string dump_path = absl::GetFlag(FLAGS_dump_bodies);
  if (!dump_path.empty()) {
    dump = std::fopen(dump_path.c_str(), "w");
    if (dump == nullptr) {
      std::fprintf(stderr, "hb-workload-stats: cannot write %s\n", dump_path.c_str());
      return 2;
    }
  }
  const int64_t dump_limit = absl::GetFlag(FLAGS_dump_limit);
  int64_t tasks = 0, rows = 0, body_bytes = 0, content_bytes = 0, prompt_tokens = 0;
  int64_t follow_rows = 0, follow_bytes = 0, follow_shared_bytes = 0;
  int64_t cacheable_tokens = 0, body_shared_bytes = 0, follow_body_bytes = 0;
  double share_sum = 0;
  double share_min = 1;
  for (const Example& ex : dataset->examples) {
    const Response* r = responses->Find(ex.prompt_id);
    if (r == nullptr) continue;
    ++tasks;
    const std::string conversation =
        RenderConversation(GradedConversation(ex.prompt, r->system_prompt, r->response));
    std::string prev_content, prev_body;
    for (size_t i = 0; i < ex.rubrics.size(); ++i) {
      const std::string prompt = tmpl->Fill(conversation, RenderRubricItem(ex.rubrics[i]));
      // As hb-grader sends it: the orchestrator passes the prompt id as prompt_cache_key.
      const std::string body = BuildChatCompletionBody(settings, prompt, ex.prompt_id);
      // What the simulator counts: every message content, concatenated.
      const std::string content = settings.system_message + prompt;
      if (dump != nullptr && rows < dump_limit) {
        std::fwrite(body.data(), 1, body.size(), dump);
        std::fputc('\n', dump);
      }
      ++rows;
      body_bytes += static_cast<int64_t>(body.size());
      content_bytes += static_cast<int64_t>(content.size());
      prompt_tokens += Tokens(content.size());
      if (i > 0) {
        const size_t shared = CommonPrefix(prev_content, content);
        ++follow_rows;
        follow_bytes += static_cast<int64_t>(content.size());
        follow_shared_bytes += static_cast<int64_t>(shared);
        const double share = static_cast<double>(shared) / static_cast<double>(content.size());
        share_sum += share;
        share_min = std::min(share_min, share);
        cacheable_tokens += CacheableTokens(shared);
        body_shared_bytes += static_cast<int64_t>(CommonPrefix(prev_body, body));
        follow_body_bytes += static_cast<int64_t>(body.size());
      }
      prev_content = content;
      prev_body = body;
    }
  }
  if (dump != nullptr && std::fclose(dump) != 0) {
    std::fprintf(stderr, "hb-workload-stats: error writing %s\n", dump_path.c_str());
    return 2;
  }
  std::printf(
      "{\"tasks\":%lld,\"rows\":%lld,\"request_body_bytes\":%lld,\"prompt_content_bytes\":%lld,"
      "\"prompt_tokens_est\":%lld,\"prompt_tokens_per_row\":%.1f,"
      "\"followup_rows\":%lld,\"prefix_shared_with_previous_share\":%.4f,"
      "\"prefix_shared_with_previous_mean_share\":%.4f,\"prefix_shared_min_share\":%.4f,"
      "\"body_prefix_shared_share\":%.4f,\"cacheable_tokens_est\":%lld,"
      "\"cacheable_share_of_prompt_tokens\":%.4f}\n",
      static_cast<long long>(tasks), static_cast<long long>(rows),
      static_cast<long long>(body_bytes), static_cast<long long>(content_bytes),
      static_cast<long long>(prompt_tokens),
      rows > 0 ? static_cast<double>(prompt_tokens) / static_cast<double>(rows) : 0.0,
      static_cast<long long>(follow_rows),
      follow_bytes > 0
          ? static_cast<double>(follow_shared_bytes) / static_cast<double>(follow_bytes)
          : 0.0,
      follow_rows > 0 ? share_sum / static_cast<double>(follow_rows) : 0.0,
      follow_rows > 0 ? share_min : 0.0,
      follow_body_bytes > 0
          ? static_cast<double>(body_shared_bytes) / static_cast<double>(follow_body_bytes)
          : 0.0,
      static_cast<long long>(cacheable_tokens),
      prompt_tokens > 0 ? static_cast<double>(cacheable_tokens) / static_cast<double>(prompt_tokens)
                        : 0.0);
  return 0;
}

}  // namespace
}  // namespace hb

int main(int argc, char** argv) {
  hb::ParseFlags(argc, argv,
                 "prints what a grading run of a workload sends: request bytes, prompt tokens "
                 "and the prefix shared with the previous request of the same task");
  return hb::Main();
}
