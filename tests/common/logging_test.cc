#include "common/base/logging.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/captured_log.h"

namespace {

// A value that counts how often fmt formatted it.
struct Counted {
  int* formatted;
};

}  // namespace

template <>
struct fmt::formatter<Counted> : fmt::formatter<int> {
  auto format(Counted c, fmt::format_context& ctx) const {
    return fmt::formatter<int>::format(++*c.formatted, ctx);
  }
};

namespace hb {
namespace {

using ::hb::testing::CapturedLog;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(LoggingTest, FormatsTheArgumentsAtTheMacrosLevel) {
  CapturedLog log(spdlog::level::debug);
  HB_LOG_INFO("rows={} share={:.2f} model={}", 12, 0.5, std::string("gpt"));
  HB_LOG_WARN("no arguments");
  HB_LOG_ERROR("code={}", -3);
  HB_LOG_DEBUG("debug {}", true);
  EXPECT_EQ(log.text(),
            "info rows=12 share=0.50 model=gpt\nwarning no arguments\nerror code=-3\n"
            "debug debug true\n");
}

TEST(LoggingTest, NothingIsFormattedBelowTheLoggersLevel) {
  CapturedLog log(spdlog::level::warn);
  int formatted = 0;
  HB_LOG_INFO("value={}", Counted{&formatted});
  HB_LOG_DEBUG("value={}", Counted{&formatted});
  EXPECT_EQ(formatted, 0);
  EXPECT_THAT(log.text(), IsEmpty());
  HB_LOG_WARN("value={}", Counted{&formatted});
  EXPECT_EQ(formatted, 1);
  EXPECT_EQ(log.text(), "warning value=1\n");
}

TEST(LoggingTest, AMalformedFormatLogsALineSayingSoInsteadOfThrowing) {
  CapturedLog log(spdlog::level::info);
  HB_LOG_WARN(fmt::runtime("two fields {} {}"), 1);
  EXPECT_THAT(log.text(), HasSubstr("warning log format error ("));
  EXPECT_THAT(log.text(), HasSubstr("in \"two fields {} {}\""));
}

}  // namespace
}  // namespace hb
