// End-to-end tests of `hb-orchestrator sample` and `run --policy` with real processes on
// loopback: hb-llm-sim answers both as the policy (/policy/v1) and as the grader (/v1).
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/journal_query.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/shared_data.h"

namespace hb {
namespace {

using ::hb::testing::BinaryDir;
using ::hb::testing::ChildProcess;
using ::hb::testing::LlmSim;
using ::hb::testing::MakeTempDir;
using ::hb::testing::PollUntil;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Dataset() {
  return ::hb::testing::SharedDataFile("2025-05-07-06-14-12_oss_eval.head30.jsonl");
}

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

// hb-orchestrator ARGS as a child, stderr into `stderr_path`, with `env` prepended.
std::unique_ptr<ChildProcess> Spawn(const std::vector<std::string>& args,
                                    const std::string& stderr_path, const std::string& env = "") {
  std::vector<std::string> quoted = {BinaryDir() + "/orchestrator/hb-orchestrator"};
  quoted.insert(quoted.end(), args.begin(), args.end());
  for (std::string& a : quoted) a = ShellQuote(a);
  const std::string command =
      absl::StrCat(env, " exec ", absl::StrJoin(quoted, " "), " 2>", ShellQuote(stderr_path));
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"/bin/sh", "-c", command});
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

// Runs to the end; returns the exit code (-1 on timeout or a signal).
int RunOrchestrator(const std::vector<std::string>& args, const std::string& stderr_path,
                    const std::string& env = "") {
  std::unique_ptr<ChildProcess> child = Spawn(args, stderr_path, env);
  if (child == nullptr) return -1;
  const int status = child->Stop(0, absl::Seconds(120));
  return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Text(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() ? *text : absl::StrCat("<missing ", path, ">");
}

// `path`'s text without the "cached_tokens" counts, which depend on what the simulator's prompt
// cache saw before (another job's identical prompts), not on the job.
// Also without the responses' sha256 in a verdicts.jsonl header (the responses files differ in
// their cached tokens).
// `text` with every run of `chars` that directly follows `key` replaced by "_".
std::string MaskAfter(const std::string& text, const std::string& key, const std::string& chars) {
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, from)) {
    size_t end = at + key.size();
    out.append(text, from, end - from).append("_");
    while (end < text.size() && chars.find(text[end]) != std::string::npos) ++end;
    from = end;
  }
  return out.append(text, from, std::string::npos);
}

// (std::regex is avoided here: GCC 12 warns -Wmaybe-uninitialized inside it at -O1 with the
// sanitizers, which -Werror turns into a failed ASan build.)
std::string WithoutCachedTokens(const std::string& path) {
  return MaskAfter(MaskAfter(Text(path), "\"cached_tokens\":", "0123456789"),
                   "\"responses_sha256\":\"", "0123456789abcdef");
}

int Lines(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return 0;
  return static_cast<int>(std::count(text->begin(), text->end(), '\n'));
}

// The "metrics" member of a summary.json, as compact JSON (every score, with all its digits).
std::string Metrics(const std::string& summary_path) {
  rapidjson::Document doc;
  doc.Parse(Text(summary_path).c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("metrics")) {
    return "<no metrics in " + summary_path + ">";
  }
  return WriteJson([&](JsonWriter& w) { doc["metrics"].Accept(w); });
}

// The simulator's --request-log lines, in arrival order: policy requests have "verdict":null,
// grader requests a verdict.
std::vector<std::string> RequestLog(const std::string& path) {
  return absl::StrSplit(Text(path), '\n', absl::SkipEmpty());
}
bool IsPolicyRequest(const std::string& line) {
  return absl::StrContains(line, "\"verdict\":null");
}
int CountRequests(const std::vector<std::string>& log, bool policy, size_t from = 0) {
  int n = 0;
  for (size_t i = from; i < log.size(); ++i) n += IsPolicyRequest(log[i]) == policy ? 1 : 0;
  return n;
}

std::vector<std::string> SampleArgs(const LlmSim& sim, const std::string& model,
                                    const std::string& out) {
  return {"sample",
          "--dataset=" + Dataset(),
          "--policy-base-url=http://127.0.0.1:" + std::to_string(sim.port) + "/policy/v1",
          "--policy-model=" + model,
          "--out=" + out,
          "--progress-interval=100ms"};
}

LlmSim StartSim(std::vector<std::string> flags) {
  flags.push_back("--policy-models=ckpt-a,ckpt-b");
  absl::StatusOr<LlmSim> sim = ::hb::testing::StartLlmSim(flags);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return sim.ok() ? *std::move(sim) : LlmSim{};
}

TEST(SampleIntegrationTest, SigkillThenTheSameCommandSamplesOnlyTheMissingTasks) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({"--policy-latency-ms=150", "--request-log=" + dir + "/requests.log"});
  std::vector<std::string> args = SampleArgs(sim, "ckpt-a", dir + "/a.jsonl");
  args.push_back("--max-in-flight=2");
  std::unique_ptr<ChildProcess> first = Spawn(args, dir + "/first.stderr");
  ASSERT_NE(first, nullptr);
  // Poll the journal (a file's state, not synchronisation) until some replies are durable.
  PollUntil([&] { return Lines(dir + "/a.jsonl.journal") >= 1 + 6; });
  first->Stop(SIGKILL, absl::Seconds(10));
  const int journaled = Lines(dir + "/a.jsonl.journal") - 1;
  ASSERT_GE(journaled, 6);
  ASSERT_LT(journaled, 30) << "the job finished before it was killed";
  const int requests_before = Lines(dir + "/requests.log");

  ASSERT_EQ(RunOrchestrator(args, dir + "/second.stderr"), 0) << Text(dir + "/second.stderr");
  EXPECT_THAT(Text(dir + "/second.stderr"), HasSubstr(absl::StrCat(journaled, " from the journal, ",
                                                                   30 - journaled, " to sample")));
  // Only the tasks without a durable reply were asked again.
  EXPECT_EQ(Lines(dir + "/requests.log") - requests_before, 30 - journaled);
  EXPECT_EQ(Lines(dir + "/a.jsonl"), 30);

  // Same replies, in the same order, as an uninterrupted job.
  ASSERT_EQ(RunOrchestrator(SampleArgs(sim, "ckpt-a", dir + "/clean.jsonl"), dir + "/clean.stderr"),
            0);
  EXPECT_EQ(WithoutCachedTokens(dir + "/a.jsonl"), WithoutCachedTokens(dir + "/clean.jsonl"));
  EXPECT_THAT(Text(dir + "/a.jsonl.summary.json"), HasSubstr("\"failed\":0"));
}

TEST(SampleIntegrationTest, RetriesThrough429sAnd5xxsToTheSameReplies) {
  const std::string dir = MakeTempDir();
  LlmSim clean = StartSim({});
  std::vector<std::string> clean_args = SampleArgs(clean, "ckpt-b", dir + "/clean.jsonl");
  clean_args.push_back("--examples=12");
  ASSERT_EQ(RunOrchestrator(clean_args, dir + "/clean.stderr"), 0);
  LlmSim faulty = StartSim({"--fault-429=0.25", "--fault-500=0.1", "--fault-reset=0.05",
                            "--retry-after-ms=20", "--seed=7"});
  std::vector<std::string> args = SampleArgs(faulty, "ckpt-b", dir + "/faulty.jsonl");
  args.push_back("--examples=12");
  args.push_back("--policy-max-attempts=20");
  ASSERT_EQ(RunOrchestrator(args, dir + "/faulty.stderr"), 0) << Text(dir + "/faulty.stderr");
  EXPECT_EQ(WithoutCachedTokens(dir + "/faulty.jsonl"), WithoutCachedTokens(dir + "/clean.jsonl"));
  EXPECT_THAT(Text(dir + "/faulty.jsonl.summary.json"), Not(HasSubstr("\"retries\":0,")));
}

TEST(SampleIntegrationTest, TasksThatExhaustTheirAttemptsAreListedAndExitThree) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({"--fault-500=0.5", "--seed=3"});
  std::vector<std::string> args = SampleArgs(sim, "ckpt-a", dir + "/a.jsonl");
  args.push_back("--policy-max-attempts=1");
  args.push_back("--examples=10");
  // The probe may hit a 500 too: that is retryable, so it is no configuration error.
  EXPECT_EQ(RunOrchestrator(args, dir + "/stderr"), 3) << Text(dir + "/stderr");
  const int failed = Lines(dir + "/a.jsonl.failures.jsonl");
  EXPECT_GT(failed, 0);
  EXPECT_EQ(Lines(dir + "/a.jsonl") + failed, 10);
  EXPECT_THAT(Text(dir + "/stderr"), HasSubstr("failed: "));
  EXPECT_THAT(Text(dir + "/a.jsonl.failures.jsonl"), HasSubstr("http_5xx"));
}

TEST(SampleIntegrationTest, ConfigurationErrorsExitTwoWithinSecondsWithTheReason) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({"--api-key=sekrit"});
  const absl::Time start = absl::Now();
  std::vector<std::string> unreachable = SampleArgs(sim, "ckpt-a", dir + "/u.jsonl");
  unreachable[2] = "--policy-base-url=http://127.0.0.1:1/v1";
  EXPECT_EQ(RunOrchestrator(unreachable, dir + "/u.stderr"), 2);
  EXPECT_THAT(Text(dir + "/u.stderr"), HasSubstr("unreachable"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));

  EXPECT_EQ(RunOrchestrator(SampleArgs(sim, "ckpt-a", dir + "/k.jsonl"), dir + "/k.stderr"), 2);
  EXPECT_THAT(Text(dir + "/k.stderr"), HasSubstr("refused the API key"));
  EXPECT_THAT(Text(dir + "/k.stderr"), Not(HasSubstr("sekrit")));

  EXPECT_EQ(RunOrchestrator(SampleArgs(sim, "gpt-9", dir + "/m.jsonl"), dir + "/m.stderr",
                            "POLICY_API_KEY=sekrit"),
            2);
  EXPECT_THAT(Text(dir + "/m.stderr"), HasSubstr("does not serve model 'gpt-9'"));

  std::vector<std::string> ok = SampleArgs(sim, "ckpt-a", dir + "/ok.jsonl");
  ok.push_back("--examples=3");
  EXPECT_EQ(RunOrchestrator(ok, dir + "/ok.stderr", "POLICY_API_KEY=sekrit"), 0)
      << Text(dir + "/ok.stderr");
  EXPECT_EQ(Lines(dir + "/ok.jsonl"), 3);
}

// What an operator in a hurry gets wrong is refused within seconds, before any request, with the
// reason and the fix: no key for a remote https policy, a host that does not resolve, an --out
// that is a directory.
TEST(SampleIntegrationTest, OperatorErrorsExitTwoBeforeAnyRequestNamingTheFix) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({"--request-log=" + dir + "/requests.log"});
  const std::string no_key = "POLICY_API_KEY=";
  const absl::Time start = absl::Now();

  std::vector<std::string> remote = SampleArgs(sim, "ckpt-a", dir + "/r.jsonl");
  remote[2] = "--policy-base-url=https://api.example.com/v1";
  EXPECT_EQ(RunOrchestrator(remote, dir + "/r.stderr", no_key), 2);
  EXPECT_EQ(Text(dir + "/r.stderr"),
            "hb-orchestrator sample: no API key for https://api.example.com/v1 "
            "(--policy-base-url): set $POLICY_API_KEY or --policy-api-key-file, or give "
            "--policy-base-url a server that needs none (on this machine, or plain http:// inside "
            "the cluster: vLLM, hb-llm-sim); an https server that takes no key accepts any "
            "placeholder key\n");

  std::vector<std::string> unresolvable = SampleArgs(sim, "ckpt-a", dir + "/u.jsonl");
  unresolvable[2] = "--policy-base-url=http://hb-preflight-test.invalid:8000/v1";
  EXPECT_EQ(RunOrchestrator(unresolvable, dir + "/u.stderr", no_key), 2);
  EXPECT_THAT(Text(dir + "/u.stderr"),
              HasSubstr("hb-orchestrator sample: cannot resolve host 'hb-preflight-test.invalid' "
                        "of --policy-base-url http://hb-preflight-test.invalid:8000/v1: "));

  EXPECT_EQ(RunOrchestrator(SampleArgs(sim, "ckpt-a", dir), dir + "/d.stderr"), 2);
  EXPECT_EQ(Text(dir + "/d.stderr"),
            absl::StrCat("hb-orchestrator sample: --out ", dir,
                         " is a directory: sample writes one responses file (plus .journal, "
                         ".failures.jsonl and .summary.json beside it); give a file path, e.g. "
                         "--out ",
                         dir, "/responses.jsonl\n"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(Lines(dir + "/requests.log"), 0);
}

// A policy URL that is a grader route (hb-llm-sim's /v1 instead of /policy/v1) answers with
// verdicts: `sample` and `run --policy` refuse it with exit 2 instead of grading verdicts as
// answers, and no reply is journaled.
TEST(SampleIntegrationTest, AGraderRouteAsPolicyIsRefused) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({});
  std::vector<std::string> sample = SampleArgs(sim, "ckpt-a", dir + "/g.jsonl");
  sample[2] = "--policy-base-url=" + sim.base_url;
  EXPECT_EQ(RunOrchestrator(sample, dir + "/sample.stderr"), 2);
  EXPECT_THAT(Text(dir + "/sample.stderr"),
              HasSubstr(absl::StrCat("hb-orchestrator sample: a reply of ", sim.base_url,
                                     " (--policy-base-url, model ckpt-a) is a grader verdict, not "
                                     "an answer to the task: a JSON object with a boolean "
                                     "\"criteria_met\": {")));
  EXPECT_THAT(Text(dir + "/sample.stderr"),
              HasSubstr(" \u2014 --policy-base-url points at a grader route; give the policy's "
                        "own endpoint (hb-llm-sim serves policies at http://HOST:PORT/policy/v1, "
                        "its grader at /v1)\n"));
  EXPECT_EQ(Lines(dir + "/g.jsonl.journal"), 1) << "only the header: no reply journaled";
  EXPECT_EQ(Text(dir + "/g.jsonl"), absl::StrCat("<missing ", dir, "/g.jsonl>"));

  const std::vector<std::string> run = {
      "run",
      "--dataset=" + Dataset(),
      "--grader-template=" + ::hb::testing::ReferenceTemplatePath(),
      "--llm-base-url=" + sim.base_url,
      "--progress=off",
      absl::StrCat("--policy=a=ckpt-a@", sim.base_url),
      "--out=" + dir + "/run"};
  EXPECT_EQ(RunOrchestrator(run, dir + "/run.stderr"), 2);
  EXPECT_THAT(Text(dir + "/run.stderr"),
              HasSubstr(absl::StrCat("hb-orchestrator run: a reply of ", sim.base_url,
                                     " (--policy a, model ckpt-a) is a grader verdict, not an "
                                     "answer to the task: ")));
  EXPECT_THAT(Text(dir + "/run.stderr"), HasSubstr(" \u2014 --policy a points at a grader route"));
  EXPECT_EQ(
      ::hb::testing::QueryJournalInt(dir + "/run/journal.sqlite", "SELECT COUNT(*) FROM replies"),
      0);

  // A remote https policy without its key: refused before anything is sent.
  std::vector<std::string> remote = run;
  remote[5] = "--policy=a=ckpt-a@https://api.example.com/v1";
  EXPECT_EQ(RunOrchestrator(remote, dir + "/remote.stderr", "POLICY_API_KEY="), 2);
  EXPECT_THAT(Text(dir + "/remote.stderr"),
              HasSubstr("hb-orchestrator run: no API key for https://api.example.com/v1 "
                        "(--policy a): set $POLICY_API_KEY or --policy-api-key-file, or give "
                        "--policy a a server that needs none"));
}

TEST(SampleIntegrationTest, RunPolicyEqualsSampleThenRunResponses) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({});
  const std::string grader = absl::StrCat("--llm-base-url=", sim.base_url);
  const std::string tmpl = "--grader-template=" + ::hb::testing::ReferenceTemplatePath();
  const std::string policy = absl::StrCat("a=ckpt-a@http://127.0.0.1:", sim.port, "/policy/v1");
  // Every real record: the scores must agree bit for bit, not just on a few tasks.
  const std::vector<std::string> common = {"run",  "--dataset=" + Dataset(), tmpl,
                                           grader, "--simulated-verdicts",   "--progress=off"};
  std::vector<std::string> one_job = common;
  one_job.insert(one_job.end(), {"--policy=" + policy, "--out=" + dir + "/one"});
  ASSERT_EQ(RunOrchestrator(one_job, dir + "/one.stderr"), 0) << Text(dir + "/one.stderr");

  std::vector<std::string> sample = SampleArgs(sim, "ckpt-a", dir + "/a.jsonl");
  ASSERT_EQ(RunOrchestrator(sample, dir + "/sample.stderr"), 0);
  std::vector<std::string> two_steps = common;
  two_steps.insert(two_steps.end(), {"--responses=a=" + dir + "/a.jsonl", "--out=" + dir + "/two"});
  ASSERT_EQ(RunOrchestrator(two_steps, dir + "/two.stderr"), 0) << Text(dir + "/two.stderr");

  EXPECT_EQ(WithoutCachedTokens(dir + "/one/a/responses.jsonl"),
            WithoutCachedTokens(dir + "/a.jsonl"));
  EXPECT_EQ(WithoutCachedTokens(dir + "/one/a/verdicts.jsonl"),
            WithoutCachedTokens(dir + "/two/a/verdicts.jsonl"));
  EXPECT_EQ(WithoutCachedTokens(dir + "/one/a/tasks.jsonl"),
            WithoutCachedTokens(dir + "/two/a/tasks.jsonl"));
  EXPECT_EQ(Metrics(dir + "/one/a/summary.json"), Metrics(dir + "/two/a/summary.json"));
  EXPECT_THAT(Metrics(dir + "/one/a/summary.json"), HasSubstr("\"overall_score\""));

  // Resumable: the same command again asks the policy nothing and grades nothing new.
  ASSERT_EQ(RunOrchestrator(one_job, dir + "/again.stderr"), 0) << Text(dir + "/again.stderr");
  EXPECT_THAT(Text(dir + "/again.stderr"),
              HasSubstr("30 task(s) with a reply in the journal, 0 to sample"));
  EXPECT_THAT(Text(dir + "/again.stderr"), HasSubstr("0 to grade"));

  // A checkpoint name used twice, across --policy and --responses.
  std::vector<std::string> twice = common;
  twice.insert(twice.end(), {"--policy=" + policy, "--responses=a=" + dir + "/a.jsonl",
                             "--out=" + dir + "/twice"});
  EXPECT_EQ(RunOrchestrator(twice, dir + "/twice.stderr"), 2);
  EXPECT_THAT(Text(dir + "/twice.stderr"), HasSubstr("'a'"));
}

TEST(SampleIntegrationTest, ShardedRunPolicyMergesToTheUnshardedResult) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({});
  const std::string policy = absl::StrCat("a=ckpt-a@http://127.0.0.1:", sim.port, "/policy/v1");
  const std::vector<std::string> common = {
      "run",
      "--dataset=" + Dataset(),
      "--examples=6",
      "--grader-template=" + ::hb::testing::ReferenceTemplatePath(),
      absl::StrCat("--llm-base-url=", sim.base_url),
      "--simulated-verdicts",
      "--progress=off",
      "--policy=" + policy};
  std::vector<std::string> whole = common;
  whole.push_back("--out=" + dir + "/whole");
  ASSERT_EQ(RunOrchestrator(whole, dir + "/whole.stderr"), 0) << Text(dir + "/whole.stderr");
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> shard = common;
    shard.insert(shard.end(), {"--out=" + dir + "/sharded", "--shard-count=2",
                               absl::StrCat("--shard-index=", i)});
    ASSERT_EQ(RunOrchestrator(shard, absl::StrCat(dir, "/shard", i, ".stderr")), 0)
        << Text(absl::StrCat(dir, "/shard", i, ".stderr"));
    // Each shard sampled only its own tasks.
    EXPECT_EQ(Lines(absl::StrCat(dir, "/sharded/shard-", i, "/a/responses.jsonl")), 3);
  }
  ASSERT_EQ(RunOrchestrator({"merge", "--out=" + dir + "/merged", dir + "/sharded/shard-0",
                             dir + "/sharded/shard-1"},
                            dir + "/merge.stderr"),
            0)
      << Text(dir + "/merge.stderr");
  EXPECT_EQ(Lines(dir + "/merged/a/responses.jsonl"), 6);
  EXPECT_EQ(WithoutCachedTokens(dir + "/merged/a/tasks.jsonl"),
            WithoutCachedTokens(dir + "/whole/a/tasks.jsonl"));
}

std::vector<std::string> PolicyRunArgs(const LlmSim& sim, const std::string& out) {
  return {"run",
          "--dataset=" + Dataset(),
          "--grader-template=" + ::hb::testing::ReferenceTemplatePath(),
          absl::StrCat("--llm-base-url=", sim.base_url),
          "--simulated-verdicts",
          absl::StrCat("--policy=a=ckpt-a@http://127.0.0.1:", sim.port, "/policy/v1"),
          "--out=" + out};
}

TEST(SampleIntegrationTest, RunPolicyGradesATasksRowsBeforeTheLastTaskIsSampled) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({"--policy-latency-ms=300", "--request-log=" + dir + "/requests.log"});
  std::vector<std::string> args = PolicyRunArgs(sim, dir + "/out");
  // One policy call at a time: the last task is asked for only after 5 replies (1.5 s).
  args.insert(args.end(), {"--examples=6", "--policy-max-in-flight=1", "--progress=log",
                           "--progress-interval=100ms"});
  ASSERT_EQ(RunOrchestrator(args, dir + "/stderr"), 0) << Text(dir + "/stderr");

  const std::vector<std::string> log = RequestLog(dir + "/requests.log");
  ASSERT_EQ(CountRequests(log, /*policy=*/true), 6);
  size_t first_grader = log.size();
  size_t last_policy = 0;
  for (size_t i = 0; i < log.size(); ++i) {
    if (IsPolicyRequest(log[i])) {
      last_policy = i;
    } else if (first_grader == log.size()) {
      first_grader = i;
    }
  }
  // The simulator logs requests as they arrive: grading started while sampling went on.
  EXPECT_LT(first_grader, last_policy);
  EXPECT_GT(CountRequests(log, /*policy=*/false), 0);
  // The progress line shows both halves.
  EXPECT_THAT(Text(dir + "/stderr"), HasSubstr("sampled "));
  EXPECT_THAT(Text(dir + "/stderr"), HasSubstr("/6 (0 in flight) | graded rows "));
  EXPECT_EQ(Lines(dir + "/out/a/responses.jsonl"), 6);
}

TEST(SampleIntegrationTest, RunPolicySigkillThenResumeNeitherResamplesNorRegrades) {
  const std::string dir = MakeTempDir();
  // Grading lags sampling (400 ms vs 150 ms a call), so a kill leaves replies not yet graded.
  LlmSim sim = StartSim(
      {"--policy-latency-ms=150", "--latency-ms=400", "--request-log=" + dir + "/requests.log"});
  std::vector<std::string> args = PolicyRunArgs(sim, dir + "/out");
  args.insert(args.end(), {"--policy-max-in-flight=2", "--progress=off"});
  std::unique_ptr<ChildProcess> first = Spawn(args, dir + "/first.stderr");
  ASSERT_NE(first, nullptr);
  // Poll the simulator's log (a file's state, not synchronisation) until sampling is under way.
  PollUntil(
      [&] { return CountRequests(RequestLog(dir + "/requests.log"), /*policy=*/true) >= 10; });
  first->Stop(SIGKILL, absl::Seconds(10));
  // Poll until the simulator has read (and logged) every request the killed run had sent.
  PollUntil([&] { return ::hb::testing::HalfClosedConnections(sim.port) == 0; });
  ASSERT_EQ(::hb::testing::HalfClosedConnections(sim.port), 0);
  const std::string journal = dir + "/out/journal.sqlite";
  const int64_t replies = ::hb::testing::QueryJournalInt(journal, "SELECT COUNT(*) FROM replies");
  const int64_t graded =
      ::hb::testing::QueryJournalInt(journal, "SELECT COUNT(*) FROM rows WHERE status = 'ok'");
  const int64_t replied_not_graded = ::hb::testing::QueryJournalInt(
      journal,
      "SELECT COUNT(*) FROM replies r WHERE (SELECT COUNT(*) FROM rows w WHERE w.checkpoint = "
      "r.checkpoint AND w.prompt_id = r.prompt_id AND w.status = 'ok') = 0");
  ASSERT_GE(replies, 5);
  ASSERT_LT(replies, 30) << "the job finished before it was killed";
  EXPECT_GT(replied_not_graded, 0);
  const size_t before = RequestLog(dir + "/requests.log").size();

  ASSERT_EQ(RunOrchestrator(args, dir + "/second.stderr"), 0) << Text(dir + "/second.stderr");
  const std::vector<std::string> log = RequestLog(dir + "/requests.log");
  // Only the tasks without a journaled reply were sampled again ...
  EXPECT_EQ(CountRequests(log, /*policy=*/true, before), 30 - replies);
  // ... and only the rows not graded were graded (those of journaled replies included).
  const int64_t total =
      ::hb::testing::QueryJournalInt(journal, "SELECT COUNT(*) FROM rows WHERE status = 'ok'");
  EXPECT_EQ(CountRequests(log, /*policy=*/false, before), total - graded);
  EXPECT_EQ(::hb::testing::QueryJournalInt(journal, "SELECT COUNT(*) FROM replies"), 30);

  // The same reports as a run never interrupted.
  std::vector<std::string> clean = PolicyRunArgs(sim, dir + "/clean");
  clean.push_back("--progress=off");
  ASSERT_EQ(RunOrchestrator(clean, dir + "/clean.stderr"), 0) << Text(dir + "/clean.stderr");
  for (const char* file : {"responses.jsonl", "verdicts.jsonl", "tasks.jsonl"}) {
    EXPECT_EQ(WithoutCachedTokens(absl::StrCat(dir, "/out/a/", file)),
              WithoutCachedTokens(absl::StrCat(dir, "/clean/a/", file)))
        << file;
  }
  EXPECT_EQ(Metrics(dir + "/out/a/summary.json"), Metrics(dir + "/clean/a/summary.json"));
}

TEST(SampleIntegrationTest, RunPolicySigtermStopsSamplingWritesWhatItHasAndResumes) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim(
      {"--policy-latency-ms=300", "--latency-ms=300", "--request-log=" + dir + "/requests.log"});
  std::vector<std::string> args = PolicyRunArgs(sim, dir + "/out");
  args.insert(args.end(), {"--policy-max-in-flight=2", "--progress=off"});
  std::unique_ptr<ChildProcess> run = Spawn(args, dir + "/first.stderr");
  ASSERT_NE(run, nullptr);
  // Poll the simulator's log (a file's state, not synchronisation) until sampling is under way.
  PollUntil([&] { return CountRequests(RequestLog(dir + "/requests.log"), /*policy=*/true) >= 6; });
  const int status = run->Stop(SIGTERM, absl::Seconds(30));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 4) << Text(dir + "/first.stderr");
  const int64_t replies =
      ::hb::testing::QueryJournalInt(dir + "/out/journal.sqlite", "SELECT COUNT(*) FROM replies");
  ASSERT_LT(replies, 30);
  // What was sampled is written, and the message says what is left.
  EXPECT_EQ(Lines(dir + "/out/a/responses.jsonl"), replies);
  EXPECT_THAT(Text(dir + "/first.stderr"),
              HasSubstr(absl::StrCat("and sample the ", 30 - replies, " task(s) without a reply")));
  ASSERT_EQ(RunOrchestrator(args, dir + "/second.stderr"), 0) << Text(dir + "/second.stderr");
  EXPECT_EQ(Lines(dir + "/out/a/responses.jsonl"), 30);
}

TEST(SampleIntegrationTest, RunPolicyGradesASubset) {
  const std::string dir = MakeTempDir();
  LlmSim sim = StartSim({});
  std::vector<std::string> args = PolicyRunArgs(sim, dir + "/out");
  args.insert(args.end(),
              {"--subset=hard",
               "--subset-dataset=" + ::hb::testing::SharedDataFile(::hb::testing::kHardHead4),
               "--progress=off"});
  ASSERT_EQ(RunOrchestrator(args, dir + "/stderr"), 0) << Text(dir + "/stderr");
  // Only the subset's tasks were sampled and graded.
  EXPECT_EQ(Lines(dir + "/out/a/responses.jsonl"), 4);
  EXPECT_EQ(Lines(dir + "/out/a/tasks.jsonl"), 4);
  EXPECT_THAT(Text(dir + "/out/a/summary.json"), HasSubstr("\"subset\": \"hard\""));
}

}  // namespace
}  // namespace hb
