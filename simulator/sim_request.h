// The chat-completions requests hb-llm-sim accepts: parsing and validation, and the
// deterministic token estimate its prompt cache and rate limiter work on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb::sim {

// One chat message. `content` is the text: a JSON string, or the concatenation of the "text"
// fields of an array of content parts; empty for null content.
struct ChatMessage {
  std::string role;
  std::string content;
};

// The parts of an OpenAI chat-completions request the simulator uses.
struct ParsedChatRequest {
  std::string model;  // echoed in the response; "hb-llm-sim" when the request has none
  std::vector<ChatMessage> messages;
  std::optional<double> temperature;
  int64_t max_tokens = 0;  // max_tokens, else max_completion_tokens, else 0
  std::string prompt_cache_key;
};

// Parses and validates a request body. kInvalidArgument (the message becomes the 400 body's
// error.message) when: the body is not valid JSON ("request body is not valid JSON: <why> at
// offset N"), not an object, `messages` is missing / not a non-empty array, a message is not an
// object or lacks a string `role`, `content` is neither string, array of parts nor null,
// `model` / `prompt_cache_key` is not a string, `temperature` is not a number in [0, 2], or
// `max_tokens` / `max_completion_tokens` is not a positive integer.
absl::StatusOr<ParsedChatRequest> ParseChatRequest(absl::string_view body);

// The deterministic token estimate: ceil(bytes / 4). 0 for empty text.
int64_t EstimateTokens(absl::string_view text);

// The prompt text the estimate and the cache work on: every message's content concatenated in
// order, with no separators (roles are not counted). prompt_tokens = EstimateTokens(this).
std::string PromptText(const ParsedChatRequest& request);

// The content of the last message with role "user"; empty when there is none.
absl::string_view LastUserMessage(const ParsedChatRequest& request);

}  // namespace hb::sim
