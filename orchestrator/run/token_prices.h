// Token prices for cost estimates (`run`'s progress line and `dry-run`'s estimate): the one
// place their defaults (gpt-4.1 list prices) and their validation live.
#pragma once

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

}  // namespace hb
