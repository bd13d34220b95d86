#include "llm/token_prices.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hb {

std::optional<TokenPrices> ListPricesForModel(absl::string_view model) {
  struct Row {
    absl::string_view name;
    TokenPrices prices;
  };
  static constexpr Row kRows[] = {
      {"gpt-4.1", {2.00, 0.50, 8.00}},       {"gpt-4.1-mini", {0.40, 0.10, 1.60}},
      {"gpt-4.1-nano", {0.10, 0.025, 0.40}}, {"o3", {2.00, 0.50, 8.00}},
      {"o4-mini", {1.10, 0.275, 4.40}},      {"gpt-5.4", {2.50, 0.25, 15.00}},
      {"gpt-5.4-mini", {0.75, 0.075, 4.50}}, {"gpt-5.4-nano", {0.20, 0.02, 1.25}},
      {"gpt-5.5", {5.00, 0.50, 30.00}},
  };
  for (const Row& row : kRows) {
    // The name itself or a dated snapshot of it ("gpt-5.4-2026-03-05"), never a sibling
    // ("gpt-5.4-pro", "o3-pro") whose prices differ.
    if (model == row.name || absl::StartsWith(model, absl::StrCat(row.name, "-20"))) {
      return row.prices;
    }
  }
  return std::nullopt;
}

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
