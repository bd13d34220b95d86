// Token prices and the cost arithmetic of every dollar figure the tools print (`run`'s progress
// and final lines, summary.json, report.html, `dry-run`'s estimate): the one place their
// defaults (gpt-4.1 list prices), their validation and the formula live.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "llm/llm_client.h"

namespace hb {

// Prices in US dollars per million tokens.
struct TokenPrices {
  double input_per_mtok = 2.00;
  double cached_input_per_mtok = 0.50;
  double output_per_mtok = 8.00;
};

// OpenAI's list prices (standard tier, prompts under 272K tokens) for the grader models this
// project knows: the model name or a dated snapshot of it ("gpt-5.4-mini-2026-03-17" ->
// gpt-5.4-mini; "gpt-5.4-pro" matches nothing); std::nullopt for any other model. The defaults of
// the --price-* flags follow the grader model through this. Sources: the gpt-4.1 defaults above;
// OpenAI's GPT-5.4 model page (2.50 / 0.25 / 15.00); the GPT-5.4 family and GPT-5.5 rows of
// OpenAI's pricing page as quoted in April-June 2026 (gpt-5.4-mini 0.75 / 0.075 / 4.50,
// gpt-5.4-nano 0.20 / 0.02 / 1.25, gpt-5.5 5.00 / 0.50 / 30.00). Reasoning tokens are output
// tokens.
std::optional<TokenPrices> ListPricesForModel(absl::string_view model);

// Token counts as the chat-completions `usage` reports them (ChatUsage, the one definition):
// `prompt_tokens` includes the `cached_tokens` billed at the cached rate.
using TokenCounts = ChatUsage;

// kInvalidArgument "--price-* flags must not be negative" when any price is negative.
absl::Status ValidateTokenPrices(const TokenPrices& prices);

// US dollars for `tokens` at `prices` times `price_factor` (1 online; the Batch API's
// discount, e.g. 0.5, for batch): uncached input (prompt minus cached, never below 0), cached
// input and output tokens each at their price.
double CostUsd(const TokenCounts& tokens, const TokenPrices& prices, double price_factor = 1.0);

// US dollars for `spent` tokens of which `batch` (a part of them) were graded through the Batch
// API: those at `prices` x `batch_price_factor`, the rest at `prices`.
double SpentCostUsd(const TokenCounts& spent, const TokenCounts& batch, const TokenPrices& prices,
                    double batch_price_factor);

// kInvalidArgument "--batch-price-factor must be in [0, 1], got X" otherwise.
absl::Status ValidateBatchPriceFactor(double factor);

}  // namespace hb
