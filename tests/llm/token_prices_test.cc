// The cost arithmetic every dollar figure goes through.
#include "llm/token_prices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;

TEST(TokenPricesTest, ListPricesFollowTheModelAndItsDatedSnapshots) {
  const std::optional<TokenPrices> gpt54 = ListPricesForModel("gpt-5.4-2026-03-05");
  ASSERT_TRUE(gpt54.has_value());
  EXPECT_EQ(gpt54->input_per_mtok, 2.50);
  EXPECT_EQ(gpt54->cached_input_per_mtok, 0.25);
  EXPECT_EQ(gpt54->output_per_mtok, 15.00);
  ASSERT_TRUE(ListPricesForModel("gpt-5.4-mini-2026-03-17").has_value());
  EXPECT_EQ(ListPricesForModel("gpt-5.4-mini-2026-03-17")->output_per_mtok, 4.50);
  EXPECT_EQ(ListPricesForModel("gpt-5.5")->input_per_mtok, 5.00);
  // The default prices are gpt-4.1's.
  EXPECT_EQ(ListPricesForModel("gpt-4.1-2025-04-14")->output_per_mtok,
            TokenPrices{}.output_per_mtok);
  // Siblings with other prices, and unknown models, have none.
  EXPECT_EQ(ListPricesForModel("gpt-5.4-pro"), std::nullopt);
  EXPECT_EQ(ListPricesForModel("o3-pro-2025-06-10"), std::nullopt);
  EXPECT_EQ(ListPricesForModel("Qwen/Qwen3-32B"), std::nullopt);
  // A cheaper judge is priced as itself, not as gpt-4.1 (the meta-eval's cost per 1,000).
  ASSERT_TRUE(ListPricesForModel("gpt-4.1-mini-2025-04-14").has_value());
  EXPECT_EQ(ListPricesForModel("gpt-4.1-mini-2025-04-14")->input_per_mtok, 0.40);
  EXPECT_EQ(ListPricesForModel("gpt-4.1-nano")->output_per_mtok, 0.40);
  EXPECT_EQ(ListPricesForModel("o4-mini-2025-04-16")->cached_input_per_mtok, 0.275);
  EXPECT_EQ(ListPricesForModel("o3-2025-04-16")->output_per_mtok, 8.00);
}

TEST(TokenPricesTest, CostPricesUncachedCachedAndOutputTokensEachAtTheirRate) {
  const TokenPrices prices;  // gpt-4.1: $2 input, $0.50 cached input, $8 output per million
  // 1.5M prompt tokens of which 1M cached, 0.25M output: 0.5*2 + 1*0.5 + 0.25*8 = 3.5.
  EXPECT_DOUBLE_EQ(CostUsd({1500000, 1000000, 250000}, prices), 3.5);
  EXPECT_DOUBLE_EQ(CostUsd({1500000, 1000000, 250000}, prices, 0.5), 1.75);
  EXPECT_DOUBLE_EQ(CostUsd({}, prices), 0.0);
  // More cached than prompt tokens (a broken usage block) never makes input cost negative.
  EXPECT_DOUBLE_EQ(CostUsd({100, 1000000, 0}, prices), 0.5);
  EXPECT_DOUBLE_EQ(CostUsd({1000000, 0, 0}, TokenPrices{3.0, 1.0, 9.0}), 3.0);
  // The figure: 82.5M prompt tokens of a full run at gpt-4.1 list prices, uncached.
  EXPECT_NEAR(CostUsd({82500000, 0, 0}, prices), 165.0, 1e-9);
}

// A run's dollars when part of its rows went through the Batch API: those at the factor.
TEST(TokenPricesTest, SpentCostPricesTheBatchPartAtTheFactor) {
  const TokenPrices prices;
  // 1.5M prompt (1M cached), 0.25M output in all: $3.5 online. A batch part of 1M prompt
  // (0.5M cached), 0.1M output costs (0.5*2 + 0.5*0.5 + 0.1*8) = $2.05 online, $1.025 at x0.5;
  // the online rest (0.5M prompt, 0.5M cached, 0.15M output) $1.45.
  EXPECT_DOUBLE_EQ(SpentCostUsd({1500000, 1000000, 250000}, {}, prices, 0.5), 3.5);
  EXPECT_DOUBLE_EQ(SpentCostUsd({1500000, 1000000, 250000}, {1000000, 500000, 100000}, prices, 0.5),
                   1.45 + 1.025);
  EXPECT_DOUBLE_EQ(
      SpentCostUsd({1500000, 1000000, 250000}, {1500000, 1000000, 250000}, prices, 0.5), 1.75);
}

TEST(TokenPricesTest, CountsAddUp) {
  TokenCounts total;
  total += {10, 4, 2};
  total += {5, 1, 3};
  EXPECT_EQ(total.prompt_tokens, 15);
  EXPECT_EQ(total.cached_tokens, 5);
  EXPECT_EQ(total.completion_tokens, 5);
}

TEST(TokenPricesTest, NegativePricesAreRefused) {
  EXPECT_THAT(ValidateTokenPrices({-1, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, "--price-* flags must not be negative"));
  EXPECT_TRUE(ValidateTokenPrices({}).ok());
}

}  // namespace
}  // namespace hb
