// hb-llm-sim as a *policy* (the model being graded): the route it answers on, which models it
// serves, and the deterministic reply it gives. Sim_core routes a request here when its path is
// under kPolicyPathPrefix; latency, rate limits and the transport faults (reset, hang, 429, 500,
// 503) are the simulator's own (see simulator/README.md, "Policy mode").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "simulator/sim_request.h"

namespace hb::sim {

// Policy requests: POST /policy/v1/chat/completions (base URL http://HOST:PORT/policy/v1).
inline constexpr absl::string_view kPolicyPathPrefix = "/policy/";
inline constexpr absl::string_view kPolicyChatPath = "/policy/v1/chat/completions";

// In the user's last message, this marker makes the policy answer with empty content.
inline constexpr absl::string_view kEmptyReplyMarker = "[[sim:policy=empty]]";

// True when `models` is empty (any model is served) or contains `model`.
bool PolicyServesModel(const std::vector<std::string>& models, absl::string_view model);

// The OpenAI-style 404 body message for a model the policy does not serve.
std::string ModelNotFoundMessage(absl::string_view model);

struct PolicyReply {
  std::string content;
  std::string finish_reason;  // "stop", or "length" when max_tokens cut the reply
  int64_t completion_tokens = 0;
};

// The policy's reply to `request`: a pure function of (model, every message's role and content,
// max_tokens). English prose of 60 to 360 words (about 80 to 500 tokens) made of sentences drawn
// from a fixed medical-advice vocabulary, seeded by SHA-256 of the model and the messages, so two
// model names give two different "checkpoints". completion_tokens = EstimateTokens(content).
// When max_tokens > 0 and the full reply would exceed it, the content is cut to the first
// 4 * max_tokens bytes and finish_reason is "length". kEmptyReplyMarker gives "" with "stop".
PolicyReply SimulatedPolicyReply(const ParsedChatRequest& request);

}  // namespace hb::sim
