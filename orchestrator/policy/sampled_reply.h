// A policy's reply to one task as `sample` and `run --policy` record it: one line of a responses
// file (the format `run --responses` reads), the journals' payload, and the one writer of a
// responses file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/healthbench/types.h"
#include "llm/llm_client.h"

namespace hb {

// One task's policy reply, as written to the responses file.
struct SampledReply {
  std::string prompt_id;
  std::string response;
  std::optional<std::string> system_prompt;
  std::string model;
  std::string finish_reason;
  ChatUsage usage;
};

// One compact JSON line, no newline: {"prompt_id","response","system_prompt" (when set),
// "model","finish_reason","usage":{"prompt_tokens","completion_tokens","total_tokens",
// "cached_tokens"}}. LoadResponses reads it (it ignores the extra fields).
std::string FormatSampledReply(const SampledReply& reply);

// Parses a FormatSampledReply line; kInvalidArgument naming the field otherwise.
absl::StatusOr<SampledReply> ParseSampledReply(const std::string& line);

// What a responses file holds.
struct ResponsesFileCounts {
  int64_t replies = 0;
  int64_t length_truncated = 0;  // finish_reason "length"
  int64_t empty = 0;             // empty content
};

// Writes `path` atomically (WriteFileAtomically): one FormatSampledReply line per task of
// `examples` that has a reply in `replies`, in the examples' order (the first reply of a
// prompt_id wins; replies of other tasks are left out). Errors: WriteFileAtomically's.
absl::StatusOr<ResponsesFileCounts> WriteResponsesFile(const std::string& path,
                                                       const std::vector<Example>& examples,
                                                       const std::vector<SampledReply>& replies);

}  // namespace hb
