#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/commands/orchestrator_cli.h"
#include "orchestrator/run/grading_job.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<std::string> Base(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--dataset", "d.jsonl", "--out=o"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(ParseRunArgsTest, DefaultsAndRepeatedResponses) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(
      RunOptions options,
      ParseRunArgs(Base({"--responses=a=x.jsonl,y.jsonl.gz", "--responses", "c=z.jsonl"})));
  ASSERT_EQ(options.checkpoints.size(), 3u);
  EXPECT_EQ(options.checkpoints[0].name, "a");
  EXPECT_EQ(options.checkpoints[1].name, "y");
  EXPECT_EQ(options.checkpoints[1].path, "y.jsonl.gz");
  EXPECT_EQ(options.checkpoints[2].path, "z.jsonl");
  EXPECT_EQ(options.dataset, "d.jsonl");
  EXPECT_EQ(options.grader, "embedded");
  EXPECT_EQ(options.max_in_flight, 512);
  EXPECT_EQ(options.row_attempts, 3);
  EXPECT_EQ(options.drain_timeout, absl::Seconds(20));
  EXPECT_EQ(options.progress_interval, absl::Seconds(5));
  EXPECT_EQ(options.progress, ProgressMode::kAuto);
  EXPECT_EQ(options.examples, -1);
  EXPECT_EQ(options.shard_index, 0);
  EXPECT_EQ(options.shard_count, 1);
  EXPECT_FALSE(options.force_new);
  EXPECT_FALSE(options.allow_partial_responses);
  EXPECT_EQ(options.stop_after_same_failures, 50);
  EXPECT_DOUBLE_EQ(options.prices.input_per_mtok, 2.00);
  EXPECT_DOUBLE_EQ(options.prices.cached_input_per_mtok, 0.50);
  EXPECT_DOUBLE_EQ(options.prices.output_per_mtok, 8.00);
  EXPECT_EQ(options.RunDir(), "o");
}

TEST(ParseRunArgsTest, ParsesEveryFlag) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(RunOptions options,
                          ParseRunArgs(Base({"--responses=r.jsonl",
                                             "--grader",
                                             "dns:///grader-headless:50051",
                                             "--max-in-flight=64",
                                             "--row_attempts=5",
                                             "--row-timeout=30s",
                                             "--examples=10",
                                             "--seed=7",
                                             "--shard-index=1",
                                             "--shard-count=3",
                                             "--force-new",
                                             "--progress=log",
                                             "--progress-interval=1s",
                                             "--drain-timeout=5s",
                                             "--price-input-per-mtok=1.5",
                                             "--price-cached-input-per-mtok=0.25",
                                             "--price-output-per-mtok=6",
                                             "--simulated-verdicts",
                                             "--noskip-invalid",
                                             "--allow-partial-responses",
                                             "--stop-after-same-failures=7",
                                             "--llm-model=m",
                                             "--grader-template=/t.txt"})));
  EXPECT_EQ(options.grader, "dns:///grader-headless:50051");
  EXPECT_EQ(options.max_in_flight, 64);
  EXPECT_EQ(options.row_attempts, 5);
  EXPECT_EQ(options.row_timeout, absl::Seconds(30));
  EXPECT_EQ(options.examples, 10);
  EXPECT_EQ(options.seed, 7u);
  EXPECT_EQ(options.shard_index, 1);
  EXPECT_EQ(options.shard_count, 3);
  EXPECT_TRUE(options.force_new);
  EXPECT_EQ(options.progress, ProgressMode::kLog);
  EXPECT_EQ(options.progress_interval, absl::Seconds(1));
  EXPECT_EQ(options.drain_timeout, absl::Seconds(5));
  EXPECT_DOUBLE_EQ(options.prices.input_per_mtok, 1.5);
  EXPECT_DOUBLE_EQ(options.prices.cached_input_per_mtok, 0.25);
  EXPECT_DOUBLE_EQ(options.prices.output_per_mtok, 6);
  EXPECT_TRUE(options.simulated_verdicts);
  EXPECT_FALSE(options.skip_invalid);
  EXPECT_TRUE(options.allow_partial_responses);
  EXPECT_EQ(options.stop_after_same_failures, 7);
  EXPECT_EQ(options.grader_options.settings.model, "m");
  EXPECT_EQ(options.grader_options.template_path, "/t.txt");
  EXPECT_EQ(options.RunDir(), "o/shard-1");
}

TEST(ParseRunArgsTest, ParsesTheBatchFlags) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(
      RunOptions options,
      ParseRunArgs(
          Base({"--responses=r.jsonl", "--grader-mode=batch", "--batch-max-requests=10",
                "--batch-max-file-bytes=4096", "--batch-poll-interval=2s",
                "--batch-fallback=online", "--batch-cancel", "--batch-price-factor=0.4"})));
  EXPECT_EQ(options.grader_mode, "batch");
  EXPECT_EQ(options.batch.max_requests, 10);
  EXPECT_EQ(options.batch.max_file_bytes, 4096);
  EXPECT_EQ(options.batch.poll_interval, absl::Seconds(2));
  EXPECT_EQ(options.batch.fallback, "online");
  EXPECT_TRUE(options.batch.cancel);
  EXPECT_DOUBLE_EQ(options.batch_price_factor, 0.4);
  HB_ASSERT_OK_AND_ASSIGN(options, ParseRunArgs(Base({"--responses=r.jsonl"})));
  EXPECT_EQ(options.grader_mode, "online");
  EXPECT_EQ(options.batch.max_requests, 50000);
  EXPECT_EQ(options.batch.max_file_bytes, 200 << 20);
  EXPECT_EQ(options.batch.poll_interval, absl::Seconds(30));
  EXPECT_DOUBLE_EQ(options.batch_price_factor, 0.5);
}

TEST(TokenPricesTest, BatchCostIsTheOnlineCostTimesTheFactor) {
  const TokenPrices prices;  // 2 / 0.5 / 8 USD per million
  // 1M prompt tokens of which 400k cached, 100k completion: 1.2 + 0.2 + 0.8 = 2.2 USD online.
  EXPECT_DOUBLE_EQ(CostUsd({1000000, 400000, 100000}, prices), 2.2);
  EXPECT_DOUBLE_EQ(CostUsd({1000000, 400000, 100000}, prices, 0.5), 1.1);
  EXPECT_TRUE(ValidateBatchPriceFactor(0).ok());
  EXPECT_FALSE(ValidateBatchPriceFactor(-0.1).ok());
}

TEST(ParseRunArgsTest, PoliciesBecomeCheckpointsSampledWhileTheRunGrades) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(
      RunOptions options,
      ParseRunArgs(Base({"--policy=step-1=m1@http://vllm:8000/v1", "--responses=b=b.jsonl",
                         "--policy-max-in-flight=7", "--policy-max-tokens=600"})));
  ASSERT_EQ(options.checkpoints.size(), 2u);
  EXPECT_EQ(options.checkpoints[1].name, "step-1");
  EXPECT_EQ(options.checkpoints[1].path, "o/step-1/responses.jsonl");
  ASSERT_EQ(options.policies.size(), 1u);
  const PolicySource& policy = options.policies[0];
  EXPECT_EQ(policy.checkpoint, "step-1");
  EXPECT_EQ(policy.options.policy_base_url, "http://vllm:8000/v1");
  EXPECT_EQ(policy.options.request.model, "m1");
  EXPECT_EQ(policy.options.max_in_flight, 7);
  EXPECT_EQ(policy.options.request.max_tokens, 600);
  EXPECT_THAT(PolicyJournalIdentity(policy), HasSubstr("\"model\":\"m1\""));

  EXPECT_THAT(ParseRunArgs(Base({"--policy=a=m@ftp://x/v1"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--policy a=m@ftp://x/v1: the policy URL (--policy a) must "
                                 "start with http:// or https://")));
  EXPECT_THAT(ParseRunArgs(Base({"--policy=a=m@http://x/v1", "--policy-max-in-flight=0"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--policy-max-in-flight must be >= 1")));
}

// "--flag=" is an empty value, never the next argument (--grader-template= records none).
// auto sends the task's prompt_id only where the endpoint is OpenAI's; explicit modes win.
TEST(ParseRunArgsTest, PromptCacheKeyAutoFollowsTheEndpointHost) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  const std::string local = "--llm-base-url=http://127.0.0.1:8000/v1";
  const struct {
    std::vector<std::string> flags;
    bool expected;
  } cases[] = {
      {{}, true},  // the default endpoint is https://api.openai.com/v1
      {{"--llm-base-url=https://API.OpenAI.com:443/v1/"}, true},
      {{local}, false},
      {{"--llm-base-url=https://api.openai.com.evil.example/v1"}, false},
      {{local, "--prompt-cache-key=prompt_id"}, true},
      {{"--prompt-cache-key=off"}, false},
      {{"--prompt-cache-key=none"}, false},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = Base({"--responses=r.jsonl"});
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    HB_ASSERT_OK_AND_ASSIGN(RunOptions options, ParseRunArgs(args));
    EXPECT_EQ(options.send_prompt_cache_key, c.expected) << absl::StrJoin(c.flags, " ");
  }
}

TEST(ParseRunArgsTest, VerdictCacheBelongsToTheEmbeddedGrader) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(RunOptions embedded,
                          ParseRunArgs(Base({"--responses=r.jsonl", "--verdict-cache=c.sqlite"})));
  EXPECT_EQ(embedded.grader_options.verdict_cache_path, "c.sqlite");
  EXPECT_THAT(ParseRunArgs(Base({"--responses=r.jsonl", "--verdict-cache=c.sqlite",
                                 "--grader=ipv4:127.0.0.1:50051"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("give --verdict-cache to the hb-grader replicas")));
}

// "--flag=" is an empty value, never the next argument (--grader-template= records none).
TEST(ParseRunArgsTest, EmptyValueDoesNotTakeTheNextArgument) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(RunOptions options,
                          ParseRunArgs(Base({"--responses=r.jsonl", "--llm-api-key-file=",
                                             "--llm-model=m", "--grader-template="})));
  EXPECT_EQ(options.grader_options.settings.model, "m");
  EXPECT_EQ(options.grader_options.template_path, "");
}

// The grader/LLM group fills RunOptions::grader_options completely: a run reads no flag.
TEST(ParseRunArgsTest, GraderOptionsDescribeTheEmbeddedGrader) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  HB_ASSERT_OK_AND_ASSIGN(
      RunOptions options,
      ParseRunArgs(Base({"--responses=r.jsonl", "--llm-base-url=http://127.0.0.1:9/v1",
                         "--llm-temperature=0", "--llm-max-tokens=16", "--max-attempts=2",
                         "--backoff-base=10ms", "--backoff-cap=1s", "--attempt-timeout=500ms",
                         "--max-message-bytes=100", "--norequire-reference-template"})));
  const GraderStackOptions& grader = options.grader_options;
  EXPECT_EQ(grader.llm.base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(grader.settings.temperature, 0);
  EXPECT_EQ(grader.settings.max_tokens, 16);
  EXPECT_EQ(grader.retry.max_attempts, 2);
  EXPECT_EQ(grader.retry.base, absl::Milliseconds(10));
  EXPECT_EQ(grader.retry.cap, absl::Seconds(1));
  EXPECT_EQ(grader.llm.attempt_timeout, absl::Milliseconds(500));
  EXPECT_EQ(grader.retry.min_attempt_time, absl::Milliseconds(500));  // capped by the timeout
  EXPECT_EQ(grader.limits.max_message_bytes, 100u);
  EXPECT_FALSE(grader.require_reference_template);
}

TEST(ParseRunArgsTest, ShardIndexFromJobCompletionIndex) {
  ::setenv("JOB_COMPLETION_INDEX", "2", 1);
  HB_ASSERT_OK_AND_ASSIGN(RunOptions options,
                          ParseRunArgs(Base({"--responses=r.jsonl", "--shard-count=4"})));
  EXPECT_EQ(options.shard_index, 2);
  HB_ASSERT_OK_AND_ASSIGN(
      options, ParseRunArgs(Base({"--responses=r.jsonl", "--shard-count=4", "--shard-index=0"})));
  EXPECT_EQ(options.shard_index, 0);  // the flag wins
  EXPECT_THAT(ParseRunArgs(Base({"--responses=r.jsonl", "--shard-count=2"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--shard-index must be in [0, 2), got 2")));
  ::setenv("JOB_COMPLETION_INDEX", "x", 1);
  EXPECT_THAT(ParseRunArgs(Base({"--responses=r.jsonl"})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("JOB_COMPLETION_INDEX='x' is not an integer")));
  ::unsetenv("JOB_COMPLETION_INDEX");
}

TEST(ParseRunArgsTest, Errors) {
  ::unsetenv("JOB_COMPLETION_INDEX");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--out=o", "--responses=r.jsonl"}, "--dataset is required"},
      {{"--dataset=d", "--responses=r.jsonl"}, "--out is required"},
      {Base(), "no --responses or --policy given"},
      {Base({"--responses=r.jsonl", "extra"}), "unexpected argument 'extra'"},
      {Base({"--responses=r.jsonl", "--bogus=1"}), "unknown flag --bogus=1"},
      {Base({"--responses=r.jsonl", "--verdicts=v"}), "flag --verdicts does not apply to 'run'"},
      {Base({"--responses=r.jsonl", "--max-in-flight=0"}), "--max-in-flight must be >= 1"},
      {Base({"--responses=r.jsonl", "--max-in-flight=lots"}),
       "invalid value 'lots' for --max-in-flight"},
      {Base({"--responses=r.jsonl", "--row-attempts=0"}), "--row-attempts must be >= 1"},
      {Base({"--responses=r.jsonl", "--examples=0"}), "--examples must be a positive count"},
      {Base({"--responses=r.jsonl", "--seed=-1"}), "invalid value '-1' for --seed"},
      {Base({"--responses=r.jsonl", "--progress=fancy"}), "--progress must be auto, tty, log"},
      {Base({"--responses=r.jsonl", "--grader=a", "--grader=b"}), "flag --grader given twice"},
      {Base({"--responses=r.jsonl", "--price_input_per_mtok=1", "--price-input-per-mtok=2"}),
       "flag --price-input-per-mtok given twice"},
      {Base({"--responses=r.jsonl", "--price-input-per-mtok=-5"}),
       "--price-* flags must not be negative"},
      {Base({"--responses=r.jsonl", "--llm-max-tokens=0"}), "--llm-max-tokens must be positive"},
      {Base({"--responses=r.jsonl", "--backoff-base=2s", "--backoff-cap=1s"}),
       "need 0 <= --backoff-base <= --backoff-cap"},
      {Base({"--responses=r.jsonl", "--prompt-cache-key=task"}),
       "--prompt-cache-key: expected auto, prompt_id or off, got 'task'"},
      {Base({"--responses=r.jsonl", "--row-timeout"}), "flag --row-timeout needs a value"},
      {Base({"--responses=a=r.jsonl", "--responses=a=s.jsonl"}), "checkpoint name 'a'"},
      {Base({"--responses=r.jsonl", "--grader-mode=offline"}),
       "--grader-mode: expected online or batch, got 'offline'"},
      {Base({"--responses=r.jsonl", "--grader-mode=batch", "--grader=ipv4:127.0.0.1:1"}),
       "--grader-mode batch sends the requests to --llm-base-url itself"},
      {Base({"--responses=r.jsonl", "--grader-mode=batch", "--batch-max-requests=50001"}),
       "--batch-max-requests must be in [1, 50000]"},
      {Base({"--responses=r.jsonl", "--grader-mode=batch", "--batch-max-file-bytes=10"}),
       "--batch-max-file-bytes must be in [1024, 209715200]"},
      {Base({"--responses=r.jsonl", "--grader-mode=batch", "--batch-poll-interval=0s"}),
       "--batch-poll-interval must be positive"},
      {Base({"--responses=r.jsonl", "--grader-mode=batch", "--batch-fallback=never"}),
       "--batch-fallback: expected batch or online, got 'never'"},
      {Base({"--responses=r.jsonl", "--batch-cancel"}), "--batch-cancel needs --grader-mode batch"},
      {Base({"--policy=a=m@http://x/v1", "--grader-mode=batch"}),
       "--grader-mode batch grades once every reply exists"},
      {Base({"--responses=r.jsonl", "--batch-price-factor=2"}),
       "--batch-price-factor must be in [0, 1], got 2"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseRunArgs(c.args),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.message;
  }
}

TEST(RunCommandTest, HelpDocumentsFlagsAndExitCodes) {
  const std::string usage = OrchestratorHelp("run");
  for (const char* flag : {"--dataset",
                           "--responses",
                           "--out",
                           "--grader",
                           "--max-in-flight",
                           "--row-attempts",
                           "--row-timeout",
                           "--examples",
                           "--seed",
                           "--shard-index",
                           "--shard-count",
                           "--force-new",
                           "--progress",
                           "--progress-interval",
                           "--drain-timeout",
                           "--price-input-per-mtok",
                           "--price-cached-input-per-mtok",
                           "--price-output-per-mtok",
                           "--simulated-verdicts",
                           "--skip-invalid",
                           "--allow-partial-responses",
                           "--stop-after-same-failures",
                           "--grader-template"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
  for (const char* code : {"\n  0  ", "\n  3  ", "\n  2  ", "\n  4  ", "\n  1  "}) {
    EXPECT_THAT(usage, HasSubstr(code));
  }
  EXPECT_THAT(usage, HasSubstr("Usage: hb-orchestrator run [OPTIONS]"));
  EXPECT_THAT(usage, Not(HasSubstr("--verdicts")));  // score's, not run's
}

TEST(RunCommandTest, ValidateRunOptionsChecksTheStructItself) {
  RunOptions options;
  options.dataset = "d";
  options.out = "o";
  EXPECT_THAT(ValidateRunOptions(options), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    HasSubstr("no --responses or --policy given")));
  options.checkpoints.push_back(CheckpointSpec{"a", "a.jsonl"});
  HB_EXPECT_OK(ValidateRunOptions(options));
  options.prices.output_per_mtok = -1;
  EXPECT_THAT(ValidateRunOptions(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--price-* flags must not be negative")));
}

TEST(RunCommandTest, TopFailureReasonsCountsWithoutTheAttemptSuffix) {
  const std::vector<std::string> errors = {
      "UNAVAILABLE: 503 (attempt 3 of 3)", "FAILED_PRECONDITION: 401 (attempt 1 of 3)",
      "UNAVAILABLE: 503 (attempt 1 of 1)", "DEADLINE_EXCEEDED: slow (attempt 3 of 3)",
      "INTERNAL: bug (attempt 3 of 3)",    "FAILED_PRECONDITION: 401 (attempt 1 of 3)",
      "UNAVAILABLE: 503 (attempt 2 of 3)"};
  EXPECT_THAT(TopFailureReasons(errors, 3),
              ::testing::ElementsAre(::testing::Pair("UNAVAILABLE: 503", 3),
                                     ::testing::Pair("FAILED_PRECONDITION: 401", 2),
                                     ::testing::Pair("DEADLINE_EXCEEDED: slow", 1)));
  EXPECT_THAT(TopFailureReasons({}, 3), ::testing::IsEmpty());
}

}  // namespace
}  // namespace hb
