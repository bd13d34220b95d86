// The exit codes of every binary, and the one mapping from an error status to an exit code.
// docs/running.md ("Exit codes of `run`") and docs/cli.md document them; binaries may use a subset.
#pragma once

#include "absl/status/status.h"

namespace hb {

inline constexpr int kExitOk = 0;
// Our failure (a bug, an I/O error on our own files, an upstream that never answered).
inline constexpr int kExitInternal = 1;
// Bad usage or bad input: flags, files, a misconfigured grader; one line on stderr says why.
inline constexpr int kExitUsage = 2;
// `run`/`merge`: the job finished but rows failed or a report is INCOMPLETE.
inline constexpr int kExitRowsFailed = 3;
// `run`: stopped by a signal before it finished (committed rows are kept).
inline constexpr int kExitInterrupted = 4;

// kExitOk for OK; kExitUsage for the caller's errors (kInvalidArgument, kNotFound,
// kPermissionDenied, kDataLoss, kFailedPrecondition, kOutOfRange); kExitInternal otherwise.
int ExitCodeFor(const absl::Status& status);

}  // namespace hb
