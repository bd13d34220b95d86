// CapturedLog: for tests that read what the code logged (HB_LOG_*, common/base/logging.h). While
// it lives, the default logger writes "<level> <message>" lines, at `level` and above, into a
// string; its destructor puts the previous default logger back. Thread-safe (servers log from
// their own threads). Needs hb::logging among the test's DEPS.
//
//   hb::testing::CapturedLog log(spdlog::level::trace);
//   ... run the code ...
//   EXPECT_THAT(log.text(), Not(HasSubstr("SECRET")));
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace hb::testing {

class CapturedLog {
 public:
  explicit CapturedLog(spdlog::level::level_enum level) : previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "captured", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
    logger->set_pattern("%l %v");
    logger->set_level(level);
    spdlog::set_default_logger(std::move(logger));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  // What was logged so far (read it after the code that logs has stopped).
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace hb::testing
