// Process-wide settings every binary applies at start-up.
#pragma once

namespace hb {

// Turns off absl::Mutex deadlock detection (Debian builds Abseil without NDEBUG, so it is on
// and cost 4-6% of the grader's CPU in profiles) and caps glibc malloc arenas at 2 unless
// MALLOC_ARENA_MAX is set (fewer, fuller arenas: 157 -> 137 MB RSS for a grader holding 2,048
// upstream calls). Call first thing in main().
void TuneProcess();

}  // namespace hb
