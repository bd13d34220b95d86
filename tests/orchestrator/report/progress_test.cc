#include "orchestrator/report/progress.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(ProgressTest, FormatsALine) {
  ProgressSnapshot s;
  s.total_rows = 5000;
  s.done_rows = 1200;
  s.done_this_run = 1000;
  s.failed_rows = 1;
  s.retries = 3;
  s.in_flight = 512;
  s.prompt_tokens = 1250000;
  s.cached_tokens = 800000;
  s.completion_tokens = 45600;
  s.elapsed = absl::Seconds(25);  // 40 rows/s; 3800 left -> 95 s
  EXPECT_EQ(FormatProgressLine(s, TokenPrices{}),
            "rows 1200/5000 (24.0%) | 40.0 rows/s | ETA 1m35s | in flight 512 | retries 3 | "
            "failed 1 | tokens in 1.25M (cached 800.0k) out 45.6k | est. $1.66");
}

TEST(ProgressTest, ShowsTheAdaptiveWindowAndPacing) {
  ProgressSnapshot s;
  s.total_rows = 10;
  s.in_flight = 20;
  s.window = 44;
  EXPECT_THAT(FormatProgressLine(s, TokenPrices{}),
              ::testing::HasSubstr("| in flight 20 (window 44) | retries"));
  s.paced_rate = 99.96;
  EXPECT_THAT(FormatProgressLine(s, TokenPrices{}),
              ::testing::HasSubstr("| in flight 20 (window 44, paced 100.0/s) | retries"));
}

TEST(ProgressTest, BeforeTheFirstRowAndWhenStopping) {
  ProgressSnapshot s;
  s.total_rows = 10;
  s.done_rows = 4;  // from the journal
  s.stopping = true;
  EXPECT_EQ(FormatProgressLine(s, TokenPrices{}),
            "rows 4/10 (40.0%) | - rows/s | ETA - | in flight 0 | retries 0 | failed 0 | "
            "tokens in 0 (cached 0) out 0 | est. $0.00 | stopping: draining in-flight rows");
}

TEST(ProgressTest, WhileSamplingShowsSampledTasksThenGradedRows) {
  ProgressSnapshot s;
  s.total_rows = 58500;
  s.done_rows = 9800;
  s.sample_total = 5000;
  s.sampled = 1200;
  s.sampling_in_flight = 100;
  EXPECT_THAT(FormatProgressLine(s, TokenPrices{}),
              ::testing::StartsWith(
                  "sampled 1200/5000 (100 in flight) | graded rows 9800/58500 (16.8%) | - rows/s"));
}

TEST(ProgressTest, VerdictCacheHitsAreShownAfterTheCost) {
  ProgressSnapshot s;
  s.total_rows = 10;
  s.done_rows = 10;
  s.from_cache_rows = 7;
  EXPECT_EQ(FormatProgressLine(s, TokenPrices{}),
            "rows 10/10 (100.0%) | - rows/s | ETA - | in flight 0 | retries 0 | failed 0 | "
            "tokens in 0 (cached 0) out 0 | est. $0.00 | from cache 7");
}

TEST(ProgressTest, CostUsesThePrices) {
  ProgressSnapshot s;
  s.prompt_tokens = 3000000;
  s.cached_tokens = 1000000;
  s.completion_tokens = 500000;
  // 2M uncached x $2 + 1M cached x $0.5 + 0.5M out x $8 = 4 + 0.5 + 4.
  EXPECT_DOUBLE_EQ(EstimatedCostUsd(s, TokenPrices{}), 8.5);
  EXPECT_DOUBLE_EQ(EstimatedCostUsd(s, TokenPrices{1.0, 0.0, 0.0}), 2.0);
}

TEST(ProgressTest, TokenCountsAndEta) {
  EXPECT_EQ(FormatTokenCount(950), "950");
  EXPECT_EQ(FormatTokenCount(45600), "45.6k");
  EXPECT_EQ(FormatTokenCount(1250000), "1.25M");
  EXPECT_EQ(FormatTokenCount(3400000000), "3.40B");
  EXPECT_EQ(FormatEta(absl::Seconds(42)), "42s");
  EXPECT_EQ(FormatEta(absl::Milliseconds(41200)), "42s");
  EXPECT_EQ(FormatEta(absl::Seconds(95)), "1m35s");
  EXPECT_EQ(FormatEta(absl::Seconds(7380)), "2h03m");
}

TEST(ProgressTest, ParsesModes) {
  ProgressMode mode = ProgressMode::kOff;
  std::string error;
  EXPECT_TRUE(ParseProgressMode("tty", &mode, &error));
  EXPECT_EQ(mode, ProgressMode::kTty);
  EXPECT_FALSE(ParseProgressMode("fancy", &mode, &error));
  EXPECT_EQ(error, "--progress must be auto, tty, log or off, got 'fancy'");
}

TEST(ProgressTest, ReporterWritesLiveLineOrLogLines) {
  ProgressSnapshot s;
  s.total_rows = 2;
  s.done_rows = 1;
  char* buffer = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  ASSERT_NE(out, nullptr);
  {
    ProgressReporter tty(ProgressMode::kTty, out, TokenPrices{});
    tty.Report(s);
    tty.Report(s);
    tty.Finish();
    ProgressReporter log(ProgressMode::kLog, out, TokenPrices{});
    log.Report(s);
    ProgressReporter off(ProgressMode::kOff, out, TokenPrices{});
    off.Report(s);
    // A memstream is not a terminal.
    EXPECT_EQ(ProgressReporter(ProgressMode::kAuto, out, TokenPrices{}).mode(), ProgressMode::kLog);
  }
  std::fclose(out);
  const std::string text(buffer, size);
  std::free(buffer);
  const std::string line = FormatProgressLine(s, TokenPrices{});
  EXPECT_EQ(text,
            "\r" + line + "\x1b[K" + "\r" + line + "\x1b[K" + "\n" + "progress: " + line + "\n");
}

}  // namespace
}  // namespace hb
