// Logging: spdlog behind one header. One line per event, key=value style; never log prompts,
// replies or secrets above debug level. Tests assert on counters and state, not on log text.
#pragma once

#include "spdlog/spdlog.h"

namespace hb {

// Sets the default logger: stderr, "<time> <level> <message>", level from `level`
// ("debug", "info", "warn", "error"; unknown names mean "info"). Call once from main().
void InitLogging(const char* level);

}  // namespace hb

#define HB_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define HB_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define HB_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define HB_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
