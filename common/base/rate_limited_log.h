// RateLimitedLog: decides which of many similar log lines (bad requests, rejected calls) are
// written, so a client hammering a server with garbage cannot flood its log. At most
// `max_lines` lines per `interval` per kind; the first line written after a suppression says
// how many similar lines were dropped. Time comes from an injected Clock.
//
//   RateLimitedLog log(Clock::Real(), {.max_lines = 5, .interval = absl::Seconds(10)});
//   if (auto line = log.Admit("INVALID_ARGUMENT")) HB_LOG_WARN("bad request{}: {}", *line, why);
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"

namespace hb {

struct RateLimitedLogOptions {
  // Lines per kind per interval; 0 suppresses every line.
  int64_t max_lines = 5;
  absl::Duration interval = absl::Seconds(10);
};

class RateLimitedLog {
 public:
  // `clock` is not owned and must outlive the log.
  RateLimitedLog(Clock& clock, RateLimitedLogOptions options) : clock_(clock), options_(options) {}

  // Whether a line of `kind` may be written now: std::nullopt when it is suppressed; otherwise
  // a suffix to append to it, "" or " (suppressed K similar)" when K lines of this kind were
  // dropped since the last one written. Thread-safe.
  std::optional<std::string> Admit(absl::string_view kind);

  // Lines of `kind` dropped so far in total (tests, metrics). Thread-safe.
  int64_t suppressed_total(absl::string_view kind) const;

 private:
  struct Window {
    absl::Time start;
    int64_t written = 0;
    int64_t suppressed_since_written = 0;
    int64_t suppressed_total = 0;
  };

  Clock& clock_;
  const RateLimitedLogOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Window> windows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
