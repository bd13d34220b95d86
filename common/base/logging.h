// Logging: spdlog behind one header. One line per event, key=value style; never log prompts,
// replies or secrets above debug level. Tests assert on counters and state, not on log text.
#pragma once

#include "spdlog/spdlog.h"

namespace hb {

// Sets the default logger: stderr, "<time> <level> <message>", level from `level`
// ("debug", "info", "warn", "error"; unknown names mean "info"). Call once from main().
void InitLogging(const char* level);

namespace logging_internal {

// Formats `format` with `args` (fmt's syntax) and writes the line to the default logger at
// `level`. Defined once, in logging.cc: fmt 9 defines its formatting code in its headers, and
// spdlog's variadic calls compiled all of it (about 3.5 CPU-seconds at -O2) into every file that
// logged. A malformed format logs a line saying so; it never throws (as spdlog's own calls).
void VLog(spdlog::level::level_enum level, fmt::string_view format, fmt::format_args args);

// What HB_LOG_* call: nothing is formatted when the default logger is above `level`.
template <typename... Args>
void Log(spdlog::level::level_enum level, fmt::format_string<Args...> format, Args&&... args) {
  if (!spdlog::default_logger_raw()->should_log(level)) return;
  VLog(level, format, fmt::make_format_args(args...));
}

}  // namespace logging_internal
}  // namespace hb

#define HB_LOG_DEBUG(...) ::hb::logging_internal::Log(::spdlog::level::debug, __VA_ARGS__)
#define HB_LOG_INFO(...) ::hb::logging_internal::Log(::spdlog::level::info, __VA_ARGS__)
#define HB_LOG_WARN(...) ::hb::logging_internal::Log(::spdlog::level::warn, __VA_ARGS__)
#define HB_LOG_ERROR(...) ::hb::logging_internal::Log(::spdlog::level::err, __VA_ARGS__)
