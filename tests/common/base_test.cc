#include <cstdlib>
#include <string>

#include "common/base/file.h"
#include "common/base/flags_usage.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

TEST(PythonFloatReprTest, MatchesPythonRepr) {
  // Expected strings are what CPython 3.11 prints for repr(float(x)).
  EXPECT_EQ(PythonFloatRepr(5.0), "5.0");
  EXPECT_EQ(PythonFloatRepr(-6.0), "-6.0");
  EXPECT_EQ(PythonFloatRepr(0.5), "0.5");
  EXPECT_EQ(PythonFloatRepr(2.5), "2.5");
  EXPECT_EQ(PythonFloatRepr(0.1), "0.1");
  EXPECT_EQ(PythonFloatRepr(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(PythonFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PythonFloatRepr(0.00001), "1e-05");
  EXPECT_EQ(PythonFloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(PythonFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PythonFloatRepr(1.5e16), "1.5e+16");
  EXPECT_EQ(PythonFloatRepr(123456.789), "123456.789");
  EXPECT_EQ(PythonFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PythonFloatRepr(0.0), "0.0");
  EXPECT_EQ(PythonFloatRepr(1e300), "1e+300");
  EXPECT_EQ(PythonFloatRepr(2.2250738585072014e-308), "2.2250738585072014e-308");
}

TEST(JsonQuoteTest, EscapesWhatJsonRequires) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}

TEST(JsonQuoteTest, EscapesAtEitherEndAndInARowAroundPlainRuns) {
  EXPECT_EQ(JsonQuote(""), "\"\"");
  EXPECT_EQ(JsonQuote("plain text"), "\"plain text\"");
  EXPECT_EQ(JsonQuote("\"x\""), "\"\\\"x\\\"\"");
  EXPECT_EQ(JsonQuote("\n\n\r\b\f"), "\"\\n\\n\\r\\b\\f\"");
  EXPECT_EQ(JsonQuote(std::string("a\0b\x1f", 4)), "\"a\\u0000b\\u001f\"");
  EXPECT_EQ(JsonQuote("\x7f~ "), "\"\x7f~ \"");
}

// Long texts are scanned in 16-byte blocks: an escape at every position of a 40-byte text, in
// the first, second and the partial third block.
TEST(JsonQuoteTest, EscapesAtEveryPositionOfALongText) {
  const std::pair<char, std::string> escapes[] = {
      {'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\x01', "\\u0001"}, {'\x1f', "\\u001f"}};
  for (const auto& [special, escaped] : escapes) {
    for (size_t at = 0; at < 40; ++at) {
      std::string text(40, 'a');
      text[at] = special;
      const std::string expected =
          "\"" + std::string(at, 'a') + escaped + std::string(39 - at, 'a') + "\"";
      EXPECT_EQ(JsonQuote(text), expected) << "escape at " << at;
    }
  }
  // Bytes 0x20 and up, UTF-8 included, are never escaped.
  std::string high;
  for (int c = 0x20; c < 0x100; ++c) {
    if (c != '"' && c != '\\') high.push_back(static_cast<char>(c));
  }
  EXPECT_EQ(JsonQuote(high), "\"" + high + "\"");
}

TEST(JsonNumberTest, IntegralValuesHaveNoFraction) {
  EXPECT_EQ(JsonNumber(10), "10");
  EXPECT_EQ(JsonNumber(-6), "-6");
  EXPECT_EQ(JsonNumber(0.5), "0.5");
}

TEST(Sha256Test, KnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(FileTest, ReadsPlainAndReportsMissing) {
  std::string dir = testing::MakeTempDir();
  ASSERT_THAT(WriteFileAtomically(dir + "/a.txt", "hello\n"), testing::IsOk());
  EXPECT_THAT(ReadFile(dir + "/a.txt"), IsOkAndHolds(std::string("hello\n")));
  EXPECT_THAT(ReadFile(dir + "/missing.txt"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.txt")));
}

TEST(FileTest, TruncatedGzipIsDataLoss) {
  std::string dir = testing::MakeTempDir();
  ASSERT_EQ(std::system(("printf 'line one\\nline two\\n' | gzip -c > " + dir + "/a.gz").c_str()),
            0);
  HB_ASSERT_OK_AND_ASSIGN(std::string whole, ReadFile(dir + "/a.gz"));
  EXPECT_EQ(whole, "line one\nline two\n");
  ASSERT_EQ(std::system(("head -c 20 " + dir + "/a.gz > " + dir + "/cut.gz").c_str()), 0);
  EXPECT_THAT(ReadFile(dir + "/cut.gz"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut.gz")));
}

TEST(FlagsTest, HyphenatedNamesBecomeUnderscoresButValuesStay) {
  const char* argv[] = {"prog",
                        "--llm-base-url=http://a-b/v1",
                        "--max-in-flight",
                        "8",
                        "-log-level=info",
                        "--out",
                        "/tmp/my-dir",
                        "--",
                        "--not-a-flag"};
  std::vector<std::string> args = NormalizeFlagNames(9, const_cast<char**>(argv));
  EXPECT_THAT(args, ::testing::ElementsAre("prog", "--llm_base_url=http://a-b/v1",
                                           "--max_in_flight", "8", "-log_level=info", "--out",
                                           "/tmp/my-dir", "--", "--not-a-flag"));
}

}  // namespace
}  // namespace hb
