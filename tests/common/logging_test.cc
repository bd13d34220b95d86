#include "common/base/logging.h"

#include <memory>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spdlog/sinks/ostream_sink.h"

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

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Makes a logger that writes "<level> <message>" lines into a string the default one while it
// lives; restores the previous default logger after.
class CapturedLog {
 public:
  explicit CapturedLog(spdlog::level::level_enum level) : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_st>(text_));
    logger->set_pattern("%l %v");
    logger->set_level(level);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

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
