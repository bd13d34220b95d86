// Token prices and the cost arithmetic of every dollar figure the tools print (`run`'s progress
// and final lines, summary.json, report.html, `dry-run`'s estimate): the one place their
// defaults (gpt-4.1 list prices), their validation and the formula live.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "llm/llm_client.h"

namespace hb {

// Prices in US dollars per million tokens.
struct TokenPrices {
  double input_per_mtok = 2.00;
  double cached_input_per_mtok = 0.50;
  double output_per_mtok = 8.00;
};

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
