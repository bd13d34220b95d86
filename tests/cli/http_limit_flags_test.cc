#include "cli/http_limit_flags.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb::cli {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

// A binary's defaults that differ from BoundedEvhttp's in every field.
HttpServerLimits Defaults() {
  HttpServerLimits limits;
  limits.max_header_bytes = 32 << 10;
  limits.max_header_count = 50;
  limits.max_request_line_bytes = 4 << 10;
  limits.max_body_bytes = 2 << 20;
  limits.max_request_time = absl::Seconds(20);
  limits.idle_timeout = absl::Seconds(77);
  return limits;
}

// The limits after parsing `args` with the flags registered on defaults Defaults().
absl::StatusOr<HttpServerLimits> Parse(std::vector<std::string> args) {
  Program program("test", "a test program");
  HttpLimitFlags flags = HttpLimitFlagsFrom(Defaults());
  AddHttpLimitFlags(program.root(), &flags);
  absl::StatusOr<Parsed> parsed = program.Parse(std::move(args));
  if (!parsed.ok()) return parsed.status();
  return ResolveHttpLimitFlags(flags, Defaults());
}

TEST(HttpLimitFlagsTest, WithoutFlagsTheBinaryDefaultsHold) {
  absl::StatusOr<HttpServerLimits> limits = Parse({});
  ASSERT_THAT(limits, IsOk());
  EXPECT_EQ(limits->max_header_bytes, size_t{32} << 10);
  EXPECT_EQ(limits->max_header_count, 50u);
  EXPECT_EQ(limits->max_request_line_bytes, size_t{4} << 10);
  EXPECT_EQ(limits->max_body_bytes, size_t{2} << 20);
  EXPECT_EQ(limits->max_request_time, absl::Seconds(20));
  // Not a flag of this group: kept from the base.
  EXPECT_EQ(limits->idle_timeout, absl::Seconds(77));
}

TEST(HttpLimitFlagsTest, EveryFlagSetsItsLimit) {
  absl::StatusOr<HttpServerLimits> limits =
      Parse({"--max-header-bytes=2048", "--max-headers=7", "--max-request-line-bytes=1024",
             "--max-body-bytes=123456", "--request-timeout=90s"});
  ASSERT_THAT(limits, IsOk());
  EXPECT_EQ(limits->max_header_bytes, 2048u);
  EXPECT_EQ(limits->max_header_count, 7u);
  EXPECT_EQ(limits->max_request_line_bytes, 1024u);
  EXPECT_EQ(limits->max_body_bytes, 123456u);
  EXPECT_EQ(limits->max_request_time, absl::Seconds(90));
}

TEST(HttpLimitFlagsTest, ValuesOutOfBoundsNameTheFlagTheBoundsAndTheValue) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--max-header-bytes=1023", "--max-header-bytes must be in [1024, 16777216], got 1023"},
      {"--max-header-bytes=16777217",
       "--max-header-bytes must be in [1024, 16777216], got 16777217"},
      {"--max-headers=0", "--max-headers must be in [1, 10000], got 0"},
      {"--max-headers=-5", "--max-headers must be in [1, 10000], got -5"},
      {"--max-request-line-bytes=255",
       "--max-request-line-bytes must be in [256, 16777216], got 255"},
      {"--max-body-bytes=0", "--max-body-bytes must be in [1, 1073741824], got 0"},
      {"--max-body-bytes=-1", "--max-body-bytes must be in [1, 1073741824], got -1"},
      {"--request-timeout=0s", "--request-timeout must be in [1s, 1h], got 0"},
      {"--request-timeout=2h", "--request-timeout must be in [1s, 1h], got 2h"},
      {"--request-timeout=500ms", "--request-timeout must be in [1s, 1h], got 500ms"},
  };
  for (const auto& [flag, message] : cases) {
    EXPECT_THAT(Parse({flag}), StatusIs(absl::StatusCode::kInvalidArgument, message)) << flag;
  }
}

TEST(HttpLimitFlagsTest, TheRequestLineMustFitTheHead) {
  EXPECT_THAT(Parse({"--max-header-bytes=2048", "--max-request-line-bytes=4096"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "--max-request-line-bytes (4096) must not exceed --max-header-bytes "
                       "(2048): the request line is part of the head"));
  EXPECT_THAT(Parse({"--max-header-bytes=2048", "--max-request-line-bytes=2048"}), IsOk());
}

TEST(HttpLimitFlagsTest, TheFlagsAreListedInHelpWithTheBinaryDefaults) {
  Program program("test", "a test program");
  HttpLimitFlags flags = HttpLimitFlagsFrom(Defaults());
  AddHttpLimitFlags(program.root(), &flags);
  const std::string help = program.Help();
  EXPECT_THAT(help, HasSubstr("--max-header-bytes N=32768"));
  EXPECT_THAT(help, HasSubstr("--max-headers N=50"));
  EXPECT_THAT(help, HasSubstr("--max-request-line-bytes N=4096"));
  EXPECT_THAT(help, HasSubstr("--max-body-bytes N=2097152"));
  EXPECT_THAT(help, HasSubstr("--request-timeout DURATION=20s"));
}

}  // namespace
}  // namespace hb::cli
