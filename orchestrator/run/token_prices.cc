#include "orchestrator/run/token_prices.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace hb {

absl::Status ValidateTokenPrices(const TokenPrices& prices) {
  for (double price :
       {prices.input_per_mtok, prices.cached_input_per_mtok, prices.output_per_mtok}) {
    if (!(price >= 0)) return absl::InvalidArgumentError("--price-* flags must not be negative");
  }
  return absl::OkStatus();
}

double TokenCostUsd(int64_t prompt_tokens, int64_t cached_tokens, int64_t completion_tokens,
                    const TokenPrices& prices) {
  const int64_t uncached = std::max<int64_t>(0, prompt_tokens - cached_tokens);
  return (static_cast<double>(uncached) * prices.input_per_mtok +
          static_cast<double>(cached_tokens) * prices.cached_input_per_mtok +
          static_cast<double>(completion_tokens) * prices.output_per_mtok) /
         1e6;
}

double BatchCostUsd(int64_t prompt_tokens, int64_t cached_tokens, int64_t completion_tokens,
                    const TokenPrices& prices, double factor) {
  return TokenCostUsd(prompt_tokens, cached_tokens, completion_tokens, prices) * factor;
}

absl::Status ValidateBatchPriceFactor(double factor) {
  if (factor >= 0 && factor <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--batch-price-factor must be in [0, 1], got ", factor));
}

}  // namespace hb
