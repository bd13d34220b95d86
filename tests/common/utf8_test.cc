#include "common/base/utf8.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::Eq;
using ::testing::Optional;

TEST(Utf8Test, ValidTextOfEveryLength) {
  for (const std::string& text :
       {std::string(), std::string("plain ascii"), std::string("caf\xC3\xA9"),
        std::string("\xE2\x82\xAC 5"), std::string("\xF0\x9F\x98\x80"),
        std::string("\xF4\x8F\xBF\xBF"), std::string("nul \0 inside", 12)}) {
    EXPECT_EQ(FirstInvalidUtf8(text), std::nullopt) << text;
  }
}

TEST(Utf8Test, TheFirstBadByteIsFound) {
  EXPECT_THAT(FirstInvalidUtf8("ok\xFFrest"), Optional(Eq(2u)));        // never valid
  EXPECT_THAT(FirstInvalidUtf8("ab\x80"), Optional(Eq(2u)));            // lone continuation
  EXPECT_THAT(FirstInvalidUtf8("abc\xC3"), Optional(Eq(3u)));           // truncated at the end
  EXPECT_THAT(FirstInvalidUtf8("\xC0\xAF"), Optional(Eq(0u)));          // overlong '/'
  EXPECT_THAT(FirstInvalidUtf8("\xE0\x80\xAF"), Optional(Eq(0u)));      // overlong, 3 bytes
  EXPECT_THAT(FirstInvalidUtf8("x\xED\xA0\x80"), Optional(Eq(1u)));     // a surrogate
  EXPECT_THAT(FirstInvalidUtf8("\xF4\x90\x80\x80"), Optional(Eq(0u)));  // past U+10FFFF
  EXPECT_THAT(FirstInvalidUtf8("\xE2\x82x"), Optional(Eq(0u)));         // cut short
}

TEST(Utf8Test, CheckUtf8NamesTheFieldTheByteAndTheOffset) {
  EXPECT_TRUE(CheckUtf8("reply", "fine \xC3\xA9").ok());
  EXPECT_THAT(CheckUtf8("reply", "bad \xFF"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "reply is not valid UTF-8: byte 0xFF at offset 4; send the text UTF-8 "
                       "encoded"));
}

}  // namespace
}  // namespace hb
