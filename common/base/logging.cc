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

}  // namespace hb
