// Token prices for cost estimates (`run`'s progress line and `dry-run`'s estimate): the one
// place their defaults (gpt-4.1 list prices) and their validation live.
#pragma once

#include <cstdint>

#include "absl/status/status.h"

namespace hb {

// Prices in US dollars per million tokens.
struct TokenPrices {
  double input_per_mtok = 2.00;
  double cached_input_per_mtok = 0.50;
  double output_per_mtok = 8.00;
};

// kInvalidArgument "--price-* flags must not be negative" when any price is negative.
absl::Status ValidateTokenPrices(const TokenPrices& prices);

// US dollars for these tokens at `prices`: prompt tokens not cached at the input price, cached
// ones at the cached-input price, completion tokens at the output price.
double TokenCostUsd(int64_t prompt_tokens, int64_t cached_tokens, int64_t completion_tokens,
                    const TokenPrices& prices);

// The Batch API's price: TokenCostUsd(...) * `factor` (--batch-price-factor; OpenAI's batch
// price is half the online one).
double BatchCostUsd(int64_t prompt_tokens, int64_t cached_tokens, int64_t completion_tokens,
                    const TokenPrices& prices, double factor);

// kInvalidArgument "--batch-price-factor must be in [0, 1], got X" otherwise.
absl::Status ValidateBatchPriceFactor(double factor);

}  // namespace hb
