#include "llm/token_prices.h"

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

double CostUsd(const TokenCounts& tokens, const TokenPrices& prices, double price_factor) {
  const int64_t uncached = std::max<int64_t>(0, tokens.prompt_tokens - tokens.cached_tokens);
  return (static_cast<double>(uncached) * prices.input_per_mtok +
          static_cast<double>(tokens.cached_tokens) * prices.cached_input_per_mtok +
          static_cast<double>(tokens.completion_tokens) * prices.output_per_mtok) /
         1e6 * price_factor;
}

double SpentCostUsd(const TokenCounts& spent, const TokenCounts& batch, const TokenPrices& prices,
                    double batch_price_factor) {
  const TokenCounts online{spent.prompt_tokens - batch.prompt_tokens,
                           spent.cached_tokens - batch.cached_tokens,
                           spent.completion_tokens - batch.completion_tokens};
  return CostUsd(online, prices) + CostUsd(batch, prices, batch_price_factor);
}

absl::Status ValidateBatchPriceFactor(double factor) {
  if (factor >= 0 && factor <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--batch-price-factor must be in [0, 1], got ", factor));
}

}  // namespace hb
