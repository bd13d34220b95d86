#include "common/base/json_io.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOk;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseJsonTest, ParsesADocument) {
  rapidjson::Document doc;
  ASSERT_THAT(ParseJson(R"({"a": [1, 2.5, "x"], "b": {"c": null}})", doc), IsOk());
  ASSERT_TRUE(doc.IsObject());
  EXPECT_EQ(doc["a"][0].GetInt(), 1);
  EXPECT_EQ(doc["a"][1].GetDouble(), 2.5);
  EXPECT_STREQ(doc["a"][2].GetString(), "x");
  EXPECT_TRUE(doc["b"]["c"].IsNull());
}

TEST(ParseJsonTest, SyntaxErrorsGiveRapidJsonsReasonAndTheOffset) {
  rapidjson::Document doc;
  EXPECT_THAT(ParseJson(R"({"a": tru})", doc),
              StatusIs(absl::StatusCode::kInvalidArgument, "Invalid value. at offset 9"));
  EXPECT_TRUE(doc.IsNull());
  EXPECT_THAT(ParseJson("\xEF\xBB\xBF{}", doc),  // a byte-order mark, as Python rejects it
              StatusIs(absl::StatusCode::kInvalidArgument, "Invalid value. at offset 0"));
  EXPECT_THAT(ParseJson("", doc),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at offset 0")));
}

TEST(ParseJsonTest, NestingBeyondTheLimitIsAnErrorAtAnyDepth) {
  rapidjson::Document doc;
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_THAT(ParseJson(at_limit, doc), IsOk());
  const std::string over =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_THAT(ParseJson(over, doc), StatusIs(absl::StatusCode::kInvalidArgument,
                                             "nesting deeper than 64 levels at offset 64"));
  // 200,000 levels: the iterative parser never recurses, so this is an error, not a crash.
  EXPECT_THAT(ParseJson(std::string(200000, '['), doc),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 64")));
  JsonParseOptions shallow;
  shallow.max_depth = 2;
  EXPECT_THAT(ParseJson(R"({"a": {"b": {}}})", doc, shallow),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 2")));
}

TEST(ParseJsonTest, OptionsSelectPrecisionAndEncodingChecks) {
  rapidjson::Document doc;
  EXPECT_THAT(ParseJson("\"\xff\"", doc), IsOk());
  JsonParseOptions strict;
  strict.validate_utf8 = true;
  EXPECT_THAT(ParseJson("\"\xff\"", doc, strict),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Invalid encoding")));
  JsonParseOptions precise;
  precise.full_precision = true;
  ASSERT_THAT(ParseJson("0.30000000000000004", doc, precise), IsOk());
  EXPECT_EQ(doc.GetDouble(), 0.30000000000000004);
}

}  // namespace
}  // namespace hb
