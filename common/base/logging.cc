#include "common/base/logging.h"

#include "spdlog/sinks/stdout_color_sinks.h"

namespace hb {

void InitLogging(const char* level) {
  auto logger = spdlog::stderr_color_mt("hb");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level == nullptr ? "info" : level));
  if (spdlog::get_level() == spdlog::level::off) spdlog::set_level(spdlog::level::info);
}

namespace logging_internal {

void VLog(spdlog::level::level_enum level, fmt::string_view format, fmt::format_args args) {
  spdlog::memory_buf_t line;
  try {
    fmt::vformat_to(fmt::appender(line), format, args);
  } catch (const fmt::format_error& e) {
    line.clear();
    fmt::format_to(fmt::appender(line), "log format error ({}) in \"{}\"", e.what(), format);
  }
  spdlog::default_logger_raw()->log(level, spdlog::string_view_t(line.data(), line.size()));
}

}  // namespace logging_internal
}  // namespace hb
