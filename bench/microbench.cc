// hb-microbench: Google Benchmark microbenchmarks of the per-row CPU work of a grading run:
// prompt rendering, the chat-completions body, grader-reply parsing, per-task scoring, the
// 5,000-task aggregate with its 1,000-sample bootstrap, and (when the journal is built) journal
// writes.
//
// Real records: the HealthBench head-30 file and the reference template are read from the shared
// folder (HB_SHARED_DIR, default "<source dir>/../shared"); they are never copied into the repo.
//
//   build-release/bench/hb-microbench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "common/grading/grader_reply.h"
#include "common/grading/scoring.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"

#ifdef HB_HAVE_JOURNAL
#include "absl/time/clock.h"
#include "orchestrator/run/sqlite_verdict_store.h"
#endif

namespace hb {
namespace {

std::string SharedDir() {
  if (const char* env = std::getenv("HB_SHARED_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
  return absl::StrCat(HB_BENCH_SOURCE_DIR, "/../shared");
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "hb-microbench: %s (set HB_SHARED_DIR to the shared folder)\n",
               what.c_str());
  std::exit(2);
}

// A reply to grade when the record has no ideal completion (synthetic text).
constexpr char kCannedReply[] =
    "Thanks for the details. From what you describe this is most likely not an emergency, but "
    "please seek urgent care if you notice chest pain, trouble breathing, fainting, or sudden "
    "weakness on one side. Rest, drink enough fluids, and see your doctor if it does not improve "
    "within a week.";

// The real records, the template and one reply per record, loaded once.
struct Corpus {
  Dataset dataset;
  std::optional<GraderTemplate> tmpl;
  std::vector<std::string> replies;
  // Every (example, item) pair, in file order.
  std::vector<std::pair<size_t, size_t>> rows;
};

const Corpus& GetCorpus() {
  static const Corpus* corpus = [] {
    auto* c = new Corpus;
    const std::string shared = SharedDir();
    absl::StatusOr<Dataset> dataset =
        LoadDataset(shared + "/data/healthbench/2025-05-07-06-14-12_oss_eval.head30.jsonl", {});
    if (!dataset.ok()) Die(dataset.status().ToString());
    c->dataset = *std::move(dataset);
    absl::StatusOr<GraderTemplate> tmpl =
        GraderTemplate::Load(shared + "/reference/grader_template.txt");
    if (!tmpl.ok()) Die(tmpl.status().ToString());
    c->tmpl = *std::move(tmpl);
    for (size_t e = 0; e < c->dataset.examples.size(); ++e) {
      const Example& ex = c->dataset.examples[e];
      c->replies.push_back(ex.ideal_completions && !ex.ideal_completions->ideal_completion.empty()
                               ? ex.ideal_completions->ideal_completion
                               : std::string(kCannedReply));
      for (size_t i = 0; i < ex.rubrics.size(); ++i) c->rows.emplace_back(e, i);
    }
    return c;
  }();
  return *corpus;
}

// One grader prompt per iteration, built from scratch as a GradeItem call does: the graded
// transcript, its rendering, the rubric item and the template fill. Cycles over all 352 rows.
void BM_RenderGraderPrompt(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  size_t r = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    const auto [e, i] = c.rows[r];
    const Example& ex = c.dataset.examples[e];
    std::vector<Message> convo = GradedConversation(ex.prompt, std::nullopt, c.replies[e]);
    std::string prompt = c.tmpl->Fill(RenderConversation(convo), RenderRubricItem(ex.rubrics[i]));
    bytes += static_cast<int64_t>(prompt.size());
    benchmark::DoNotOptimize(prompt);
    if (++r == c.rows.size()) r = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_RenderGraderPrompt);

// A whole task per iteration the way GradeReply can do it: the transcript rendered once, the
// template filled once per rubric item. Items/s counts rubric rows.
void BM_RenderGraderPromptPerTask(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  size_t e = 0;
  int64_t items = 0;
  for (auto _ : state) {
    const Example& ex = c.dataset.examples[e];
    const std::string conversation =
        RenderConversation(GradedConversation(ex.prompt, std::nullopt, c.replies[e]));
    for (const RubricItem& item : ex.rubrics) {
      std::string prompt = c.tmpl->Fill(conversation, RenderRubricItem(item));
      benchmark::DoNotOptimize(prompt);
    }
    items += static_cast<int64_t>(ex.rubrics.size());
    if (++e == c.dataset.examples.size()) e = 0;
  }
  state.SetItemsProcessed(items);
}
BENCHMARK(BM_RenderGraderPromptPerTask);

// The JSON body of one chat-completions request, from an already filled prompt (~3-15 KB).
void BM_BuildChatCompletionBody(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  std::vector<std::string> prompts;
  for (const auto& [e, i] : c.rows) {
    const Example& ex = c.dataset.examples[e];
    prompts.push_back(
        c.tmpl->Fill(RenderConversation(GradedConversation(ex.prompt, std::nullopt, c.replies[e])),
                     RenderRubricItem(ex.rubrics[i])));
  }
  const GraderSettings settings;
  size_t r = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    std::string body = BuildChatCompletionBody(settings, prompts[r], "bench-cache-key");
    bytes += static_cast<int64_t>(body.size());
    benchmark::DoNotOptimize(body);
    if (++r == prompts.size()) r = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_BuildChatCompletionBody);

// A typical grader reply (about 300 bytes, synthetic), plain and in a ```json fence.
constexpr char kReply[] =
    "{\"explanation\": \"The response advises the user to seek emergency care right away and "
    "names the warning signs (chest pain, shortness of breath, fainting) that make it urgent, "
    "which is what the rubric item asks for. It does not delay the referral with unnecessary "
    "questions.\", \"criteria_met\": true}";

void BM_ParseGraderReply(benchmark::State& state) {
  const std::string reply =
      state.range(0) == 0 ? std::string(kReply) : absl::StrCat("```json\n", kReply, "\n```");
  for (auto _ : state) {
    absl::StatusOr<Verdict> verdict = ParseGraderReply(reply);
    if (!verdict.ok() || !verdict->criteria_met) {
      state.SkipWithError("reply did not parse");
      break;
    }
    benchmark::DoNotOptimize(verdict);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(state.range(0) == 0 ? "plain" : "fenced");
}
BENCHMARK(BM_ParseGraderReply)->Arg(0)->Arg(1);

// Per-task scoring (overall, example tags, rubric tags) over the real rubrics.
void BM_ScoreTask(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  std::mt19937 rng(1);
  std::vector<std::vector<bool>> met;
  for (const Example& ex : c.dataset.examples) {
    std::vector<bool> m;
    for (size_t i = 0; i < ex.rubrics.size(); ++i) m.push_back(rng() & 1);
    met.push_back(std::move(m));
  }
  size_t e = 0;
  for (auto _ : state) {
    const Example& ex = c.dataset.examples[e];
    absl::StatusOr<OrderedMetrics> m = ScoreTask(ex.prompt_id, ex.example_tags, ex.rubrics, met[e]);
    benchmark::DoNotOptimize(m);
    if (++e == c.dataset.examples.size()) e = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScoreTask);

// ScoreTask on a hostile rubric: 40 items x 500 distinct tags (20,000 tags). Linear since the
// tag groups hold item indices and metrics are found by hash (issue #12).
void BM_ScoreTaskManyTags(benchmark::State& state) {
  const int items_n = 40;
  const int tags_per_item = static_cast<int>(state.range(0)) / items_n;
  std::vector<RubricItem> items(items_n);
  std::vector<bool> met(items_n);
  for (int i = 0; i < items_n; ++i) {
    items[i].criterion = "c";
    items[i].points = i + 1;
    met[i] = i % 2 == 0;
    for (int k = 0; k < tags_per_item; ++k) items[i].tags.push_back(absl::StrCat("t", i, "-", k));
  }
  for (auto _ : state) {
    absl::StatusOr<OrderedMetrics> m = ScoreTask("many", {}, items, met);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_ScoreTaskManyTags)->Arg(20000)->Unit(benchmark::kMillisecond);

// The final aggregate of a 5,000-task run: every metric key's clipped mean and its 1,000-sample
// bootstrap. Tasks cycle the real records (real example and rubric tags) with random verdicts.
void BM_Aggregate(benchmark::State& state) {
  const Corpus& c = GetCorpus();
  const size_t n = static_cast<size_t>(state.range(0));
  std::mt19937 rng(2);
  std::vector<OrderedMetrics> tasks;
  tasks.reserve(n);
  for (size_t t = 0; t < n; ++t) {
    const Example& ex = c.dataset.examples[t % c.dataset.examples.size()];
    std::vector<bool> met;
    for (size_t i = 0; i < ex.rubrics.size(); ++i) met.push_back(rng() & 1);
    absl::StatusOr<OrderedMetrics> m = ScoreTask(ex.prompt_id, ex.example_tags, ex.rubrics, met);
    if (!m.ok()) {
      state.SkipWithError(m.status().ToString().c_str());
      return;
    }
    tasks.push_back(*std::move(m));
  }
  AggregateOptions options;
  options.bootstrap_samples = 1000;
  size_t keys = 0;
  for (auto _ : state) {
    AggregateResult result = Aggregate(tasks, options);
    keys = result.metrics.size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["metric_keys"] = static_cast<double>(keys);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_Aggregate)->Arg(5000)->Unit(benchmark::kMillisecond);

#ifdef HB_HAVE_JOURNAL
// Journal throughput: `batch` rows appended per iteration, then Flush (one or more SQLite
// transactions, WAL, synchronous=NORMAL) into a fresh journal in a temporary folder.
void BM_JournalWrite(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  char dir_template[] = "/tmp/hb-microbench-journal-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const std::string dir = dir_template;
  SqliteVerdictStoreOptions options;
  options.path = dir + "/journal.sqlite";
  options.meta.dataset_sha256 = "bench";
  options.meta.grader.template_sha256 = kGraderTemplateSha256;  // default settings: SPEC §5
  options.meta.tool_version = "bench";
  options.meta.responses_sha256 = {{"bench", "bench"}};
  absl::StatusOr<std::unique_ptr<SqliteVerdictStore>> store = SqliteVerdictStore::Open(options);
  if (!store.ok()) {
    state.SkipWithError(store.status().ToString().c_str());
    return;
  }
  int64_t task = 0;
  for (auto _ : state) {
    for (int r = 0; r < batch; ++r) {
      RowRecord row;
      row.key = RowKey{"bench", absl::StrCat("task-", task + r / 12), r % 12};
      row.ok = true;
      row.criteria_met = (r & 1) != 0;
      row.explanation = kReply;
      row.attempts = 1;
      row.prompt_tokens = 1500;
      row.cached_tokens = 1024;
      row.completion_tokens = 60;
      row.time = absl::Now();
      (*store)->Append(std::move(row), [](const absl::Status&) {});
    }
    task += batch / 12 + 1;
    if (absl::Status s = (*store)->Flush(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      break;
    }
  }
  state.counters["transactions"] = static_cast<double>((*store)->transactions_committed());
  state.SetItemsProcessed(state.iterations() * batch);
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) {
    unlink((options.path + suffix).c_str());
  }
  rmdir(dir.c_str());
}
BENCHMARK(BM_JournalWrite)->Arg(256)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif

}  // namespace
}  // namespace hb
