// The chat-completions request body sent to the grader model (SPEC §5). One function builds
// it, so `hb-orchestrator dry-run` prints exactly what `hb-grader` sends.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

// The JSON body: {"model": ..., "messages": [{"role": "system", "content": <system_message>},
// {"role": "user", "content": <grader_prompt>}], "temperature": ..., "max_tokens": ...}, keys
// in that order, compact, UTF-8 unescaped. `prompt_cache_key`, when non-empty, is added as
// "prompt_cache_key" (an OpenAI extension that routes requests sharing a prefix together).
std::string BuildChatCompletionBody(const GraderSettings& settings,
                                    absl::string_view grader_prompt,
                                    absl::string_view prompt_cache_key = "");

}  // namespace hb
