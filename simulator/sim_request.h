// The chat-completions and Responses API requests hb-llm-sim accepts: parsing and validation,
// and the deterministic token estimates its prompt cache and rate limiter work on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb::sim {

// One chat message. `content` is the text: a JSON string, or the concatenation of the "text"
// fields of an array of content parts; empty for null content.
struct ChatMessage {
  std::string role;
  std::string content;
};

// The parts of an OpenAI chat-completions (or Responses API) request the simulator uses.
struct ParsedChatRequest {
  GraderApi api = GraderApi::kChatCompletions;
  std::string model;  // echoed in the response; "hb-llm-sim" when the request has none
  std::vector<ChatMessage> messages;  // Responses: `input`
  std::optional<double> temperature;
  // max_tokens, else max_completion_tokens, else 0; Responses: max_output_tokens, else 0.
  int64_t max_tokens = 0;
  std::string prompt_cache_key;
  std::string reasoning_effort;  // Responses: reasoning.effort, empty when absent
};

// Parses and validates a request body. kInvalidArgument (the message becomes the 400 body's
// error.message) when: the body is not valid JSON ("request body is not valid JSON: <why> at
// offset N"), not an object, `messages` is missing / not a non-empty array, a message is not an
// object or lacks a string `role`, `content` is neither string, array of parts nor null,
// `model` / `prompt_cache_key` is not a string, `temperature` is not a number in [0, 2], or
// `max_tokens` / `max_completion_tokens` is not a positive integer.
absl::StatusOr<ParsedChatRequest> ParseChatRequest(absl::string_view body);

// Parses and validates a Responses API body (POST /v1/responses). kInvalidArgument as above,
// and when: `input` is missing, or neither a string (one user message) nor a non-empty array
// of messages (fields named input[i]...), `messages` is present ("Unknown parameter:
// 'messages'."), `reasoning` is not an object or its `effort` is not one of none, minimal, low,
// medium, high, xhigh, `temperature` is given together with a reasoning effort other than
// "none" (as OpenAI refuses it for reasoning models), or `max_output_tokens` is not a positive
// integer.
absl::StatusOr<ParsedChatRequest> ParseResponsesRequest(absl::string_view body);

// The reasoning tokens the simulator bills for `effort` (deterministic, not measured: a
// stand-in so costs and rate limits see reasoning models' extra output): none or empty 0,
// minimal 32, low 192, medium 768, high 3072, xhigh 6144.
int64_t SimulatedReasoningTokens(absl::string_view effort);

// The deterministic token estimate: ceil(bytes / 4). 0 for empty text.
int64_t EstimateTokens(absl::string_view text);

// The prompt text the estimate and the cache work on: every message's content concatenated in
// order, with no separators (roles are not counted). prompt_tokens = EstimateTokens(this).
std::string PromptText(const ParsedChatRequest& request);

// The content of the last message with role "user"; empty when there is none.
absl::string_view LastUserMessage(const ParsedChatRequest& request);

}  // namespace hb::sim
