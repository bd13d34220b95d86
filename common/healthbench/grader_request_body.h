// The request body sent to the grader model: chat completions (SPEC §5) or the Responses API
// (simple-evals PR #108), chosen by GraderSettings::api. One function, BuildGraderRequestBody,
// builds it, so `hb-orchestrator dry-run` prints exactly what `hb-grader` sends and the
// verdict cache keys on exactly what was asked.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

// The JSON body: {"model": ..., "messages": [{"role": "system", "content": <system_message>},
// {"role": "user", "content": <grader_prompt>}], "temperature": ..., "max_tokens": ...}, keys
// in that order, compact, UTF-8 unescaped. `prompt_cache_key`, when non-empty, is added as
// "prompt_cache_key" (an OpenAI extension that routes requests sharing a prefix together).
//
// Exact bytes (RapidJSON Writer): no whitespace at all; strings keep every byte >= 0x20
// (non-ASCII UTF-8 and '/' unescaped), escape '"' and '\' with a backslash, \b \t \n \f \r
// as such and other control bytes as \u00XX (upper-case hex); temperature is the shortest
// round-trip double and always has a fraction or exponent (0.5 -> 0.5, 1 -> 1.0, 0 -> 0.0;
// NaN/inf -> null); max_tokens is a plain integer. An empty `system_message` omits the system
// turn, like the reference sampler (it sends one only when truthy). Example, one line:
//   {"model":"m","messages":[{"role":"system","content":"S"},{"role":"user","content":"P"}],
//   "temperature":0.5,"max_tokens":2048,"prompt_cache_key":"k"}
// The members of settings.extra_body (--llm-extra-body, a JSON object validated by
// ValidateGraderSettings) come after the fixed keys and before "prompt_cache_key", in their
// order, for both APIs.
std::string BuildChatCompletionBody(const GraderSettings& settings, absl::string_view grader_prompt,
                                    absl::string_view prompt_cache_key = "");

// The Responses API body of PR #108's grader: {"model": ..., "input": [{"role": "user",
// "content": <grader_prompt>}], "reasoning": {"effort": <reasoning_effort>}}, keys in that
// order, bytes as above. No system or developer message, no temperature, no max output tokens.
// "reasoning" is omitted when `reasoning_effort` is empty; `prompt_cache_key`, when non-empty,
// comes last as for chat. Example, one line:
//   {"model":"gpt-5.4-2026-03-05","input":[{"role":"user","content":"P"}],
//   "reasoning":{"effort":"low"}}
std::string BuildResponsesBody(const GraderSettings& settings, absl::string_view grader_prompt,
                               absl::string_view prompt_cache_key = "");

// BuildChatCompletionBody or BuildResponsesBody, by settings.api. What every caller uses.
std::string BuildGraderRequestBody(const GraderSettings& settings, absl::string_view grader_prompt,
                                   absl::string_view prompt_cache_key = "");

// The bodies of every rubric item of one reply without a copy of the conversation per item:
// the grader prompt's pieces around its rubric item slots (GraderTemplate::WithConversation::
// Segments) are escaped once and shared. Concatenated, Parts(item) is byte for byte
// BuildGraderRequestBody(settings, StrJoin(segments, item), prompt_cache_key) (JSON escaping
// works byte by byte, so escaping the pieces apart changes nothing). Immutable and
// thread-safe once built; the parts stay valid as long as any holder keeps them.
class SharedChatCompletionBody {
 public:
  using Part = std::shared_ptr<const std::string>;

  SharedChatCompletionBody() = default;
  // `segments` must not be empty (a prompt without a slot is one segment).
  SharedChatCompletionBody(const GraderSettings& settings,
                           const std::vector<absl::string_view>& segments,
                           absl::string_view prompt_cache_key);

  // The body for `rubric_item`: the shared pieces with the escaped item between them.
  std::vector<Part> Parts(absl::string_view rubric_item) const;

 private:
  // pieces_[0]: the JSON before the prompt and the escaped first segment; pieces_[i]: the
  // escaped segment i; the last also holds the JSON after the prompt.
  std::vector<Part> pieces_;
};

// The parts joined (tests, dry runs, small bodies).
std::string JoinParts(const std::vector<SharedChatCompletionBody::Part>& parts);

}  // namespace hb
