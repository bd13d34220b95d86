#include "orchestrator/run/token_prices.h"

#include <algorithm>

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

}  // namespace hb
