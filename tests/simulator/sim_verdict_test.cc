#include "simulator/sim_verdict.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

// Published SHA-256 test vectors: sha256("") = e3b0c442..., sha256("abc") = ba7816bf...,
// sha256("The quick brown fox jumps over the lazy dog") = d7a8fbb3...
TEST(SimulatedVerdictTest, LowestBitOfFirstDigestByte) {
  EXPECT_TRUE(SimulatedVerdict(""));                                             // 0xe3 is odd
  EXPECT_FALSE(SimulatedVerdict("abc"));                                         // 0xba is even
  EXPECT_TRUE(SimulatedVerdict("The quick brown fox jumps over the lazy dog"));  // 0xd7
}

TEST(SimulatedVerdictTest, IsDeterministicAndBalanced) {
  int met = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string content = absl::StrCat("rubric item ", i);
    const bool verdict = SimulatedVerdict(content);
    EXPECT_EQ(verdict, SimulatedVerdict(content));
    met += verdict ? 1 : 0;
  }
  // A fair bit: far from all-true or all-false.
  EXPECT_GT(met, 850);
  EXPECT_LT(met, 1150);
}

TEST(SimulatedVerdictTest, MarkerOverridesTheHash) {
  // "abc" alone is false; "" alone is true (see above).
  EXPECT_TRUE(SimulatedVerdict("abc [[sim:met=true]]"));
  EXPECT_FALSE(SimulatedVerdict("[[sim:met=false]]"));
  EXPECT_TRUE(SimulatedVerdict("prefix [[sim:met=true]] suffix"));
  // Both present: the marker that starts last wins.
  EXPECT_TRUE(SimulatedVerdict("[[sim:met=false]] then [[sim:met=true]]"));
  EXPECT_FALSE(SimulatedVerdict("[[sim:met=true]] then [[sim:met=false]]"));
}

TEST(SimulatedReplyContentTest, IsTheGraderJsonShape) {
  for (bool met : {true, false}) {
    const std::string content = SimulatedReplyContent(met, "He said \"hi\"\n\\ok");
    rapidjson::Document doc;
    doc.Parse(content.c_str());
    ASSERT_FALSE(doc.HasParseError()) << content;
    ASSERT_TRUE(doc.IsObject());
    ASSERT_TRUE(doc["criteria_met"].IsBool());
    EXPECT_EQ(doc["criteria_met"].GetBool(), met);
    EXPECT_STREQ(doc["explanation"].GetString(), "He said \"hi\"\n\\ok");
    EXPECT_THAT(content, ::testing::StartsWith("{\"explanation\": "));
  }
  EXPECT_EQ(
      SimulatedReplyContent(false),
      absl::StrCat("{\"explanation\": \"", kSimDefaultExplanation, "\", \"criteria_met\": false}"));
}

}  // namespace
}  // namespace hb
