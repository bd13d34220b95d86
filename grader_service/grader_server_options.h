// Validation and derived limits of GraderServerOptions, shared by hb-grader and the embedded
// grader of `hb-orchestrator run` (the flags that fill the struct live in cli/).
#pragma once

#include "absl/status/statusor.h"
#include "grader_service/grader_server.h"

namespace hb {

// Checks `options` (kInvalidArgument naming the flag that sets the bad field, never the API
// key) and fills the fields derived from others: retry.min_attempt_time is capped at
// llm.attempt_timeout, and max_receive_message_bytes leaves room for a whole conversation at
// the limits (4 x max_message_bytes, at least 64 MiB, at most 1 GiB). Thread-safe.
absl::StatusOr<GraderServerOptions> CompleteGraderServerOptions(GraderServerOptions options);

}  // namespace hb
