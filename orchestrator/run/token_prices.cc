#include "orchestrator/run/token_prices.h"

namespace hb {

absl::Status ValidateTokenPrices(const TokenPrices& prices) {
  for (double price :
       {prices.input_per_mtok, prices.cached_input_per_mtok, prices.output_per_mtok}) {
    if (!(price >= 0)) return absl::InvalidArgumentError("--price-* flags must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace hb
