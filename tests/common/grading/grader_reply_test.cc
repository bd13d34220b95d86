#include "common/grading/grader_reply.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOkAndHolds;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Field;
using ::testing::HasSubstr;

constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;

auto VerdictIs(bool met, const std::string& explanation) {
  return IsOkAndHolds(
      AllOf(Field(&Verdict::criteria_met, met), Field(&Verdict::explanation, explanation)));
}

TEST(StripGraderReplyFencesTest, FollowsThePythonRegex) {
  EXPECT_EQ(StripGraderReplyFences("```json\n{}\n```"), "{}");
  EXPECT_EQ(StripGraderReplyFences("  ```json {\"a\": 1}```  "), "{\"a\": 1}");
  // A fence without the tag (or with "JSON") stays at the start; the closing one still goes.
  EXPECT_EQ(StripGraderReplyFences("```\n{}\n```"), "```\n{}");
  EXPECT_EQ(StripGraderReplyFences("```JSON {} ```"), "```JSON {}");
  EXPECT_EQ(StripGraderReplyFences("{} ```"), "{}");
  EXPECT_EQ(StripGraderReplyFences("```"), "");
  EXPECT_EQ(StripGraderReplyFences("````"), "`");
  EXPECT_EQ(StripGraderReplyFences("```json"), "");
  EXPECT_EQ(StripGraderReplyFences("```json```"), "");
  EXPECT_EQ(StripGraderReplyFences("```json\n\n```"), "");
  EXPECT_EQ(StripGraderReplyFences("```jsonx```"), "x");
  // Only the very start and the very end.
  EXPECT_EQ(StripGraderReplyFences("Here: ```json {} ```"), "Here: ```json {}");
  EXPECT_EQ(StripGraderReplyFences("```json {} ``` done"), "{} ``` done");
  // Unicode whitespace: strip and \s use Python's set.
  EXPECT_EQ(StripGraderReplyFences("\u00a0\u3000```json\u2028{}\u00a0```\u2029\x1c"), "{}");
  EXPECT_EQ(StripGraderReplyFences("\u0085{}\u202f"), "{}");
  // U+200B and U+FEFF are not whitespace; nor is an invalid UTF-8 byte or an overlong space.
  EXPECT_EQ(StripGraderReplyFences("\u200b{}"), "\u200b{}");
  EXPECT_EQ(StripGraderReplyFences("\ufeff{}"), "\ufeff{}");
  EXPECT_EQ(StripGraderReplyFences("\xa0{}\xc2"), "\xa0{}\xc2");
  EXPECT_EQ(StripGraderReplyFences("\xc0\xa0{}"), "\xc0\xa0{}");
  EXPECT_EQ(StripGraderReplyFences(" \t\r\n\v\f"), "");
}

TEST(ParseGraderReplyTest, AcceptsPlainAndJsonFencedObjects) {
  EXPECT_THAT(ParseGraderReply(R"({"explanation": "fine", "criteria_met": true})"),
              VerdictIs(true, "fine"));
  EXPECT_THAT(ParseGraderReply("```json\n{\"criteria_met\": false, \"explanation\": \"no\"}\n```"),
              VerdictIs(false, "no"));
  EXPECT_THAT(ParseGraderReply("\u00a0\u3000```json {\"criteria_met\": true}```\u3000\u00a0"),
              VerdictIs(true, kNoExplanation));
  // A bare trailing fence is removed too.
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": true, \"explanation\": \"\"}\n```"),
              VerdictIs(true, ""));
}

TEST(ParseGraderReplyTest, RejectsOtherFencesAndSurroundingText) {
  for (const char* reply : {
           "```\n{\"criteria_met\": true}\n```",
           "```JSON\n{\"criteria_met\": true}\n```",
           "Sure! ```json\n{\"criteria_met\": true}\n```",
           "```json\n{\"criteria_met\": true}\n``` Hope this helps.",
           "{\"criteria_met\": true}\u200b",
       }) {
    EXPECT_THAT(ParseGraderReply(reply),
                StatusIs(kDataLoss, HasSubstr("grader reply is not valid JSON: ")))
        << reply;
  }
  EXPECT_THAT(ParseGraderReply("```\n{\"criteria_met\": true}\n```"),
              StatusIs(kDataLoss, HasSubstr("at offset 0")));
}

TEST(ParseGraderReplyTest, CriteriaMetMustBeAJsonBoolean) {
  for (const char* reply : {
           R"({"criteria_met": "true"})",
           R"({"criteria_met": "false"})",
           R"({"criteria_met": 1})",
           R"({"criteria_met": 0})",
           R"({"criteria_met": null})",
           R"({"criteria_met": [true]})",
       }) {
    EXPECT_THAT(ParseGraderReply(reply),
                StatusIs(kDataLoss, "'criteria_met' is not a JSON boolean"))
        << reply;
  }
  EXPECT_THAT(ParseGraderReply(R"({"criterion_met": true})"),
              StatusIs(kDataLoss, "grader reply has no 'criteria_met'"));
  EXPECT_THAT(ParseGraderReply("{}"), StatusIs(kDataLoss, "grader reply has no 'criteria_met'"));
}

TEST(ParseGraderReplyTest, NonObjectValuesAreRetriableFailures) {
  for (const char* reply : {"42", "\"criteria_met\"", "[\"criteria_met\", true]",
                            "[{\"criteria_met\": true}]", "true", "null", "NaN"}) {
    EXPECT_THAT(ParseGraderReply(reply), StatusIs(kDataLoss, "grader reply is not a JSON object"))
        << reply;
  }
}

TEST(ParseGraderReplyTest, InvalidJson) {
  EXPECT_THAT(ParseGraderReply(""),
              StatusIs(kDataLoss,
                       "grader reply is not valid JSON: The document is empty. at "
                       "offset 0"));
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": true} {}"),
              StatusIs(kDataLoss, HasSubstr("at offset 23")));
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": true,}"),
              StatusIs(kDataLoss, HasSubstr("JSON")));
  EXPECT_THAT(ParseGraderReply("{'criteria_met': true}"), StatusIs(kDataLoss, HasSubstr("JSON")));
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": True}"), StatusIs(kDataLoss, HasSubstr("JSON")));
  // RapidJSON's extra spellings of NaN/Inf are closed: Python rejects them.
  for (const char* number : {"Inf", "-Inf", "-NaN", "NaN.5", "Infe3", "Infinity.0"}) {
    EXPECT_THAT(
        ParseGraderReply(absl::StrCat("{\"criteria_met\": true, \"explanation\": ", number, "}")),
        StatusIs(kDataLoss, HasSubstr("invalid number")))
        << number;
  }
  // A raw NUL would end RapidJSON's input early; Python rejects it.
  EXPECT_THAT(ParseGraderReply(std::string("{\"criteria_met\": true}\0x", 24)),
              StatusIs(kDataLoss, HasSubstr("NUL character at offset 22")));
  // Control characters inside strings and invalid UTF-8 are errors.
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": true, \"explanation\": \"a\tb\"}"),
              StatusIs(kDataLoss, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseGraderReply("{\"criteria_met\": true, \"explanation\": \"\xff\"}"),
              StatusIs(kDataLoss, HasSubstr("not valid JSON")));
  // Deep nesting is an error, not a stack overflow.
  std::string deep = "{\"criteria_met\": true, \"explanation\": ";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(ParseGraderReply(deep),
              StatusIs(kDataLoss, HasSubstr("nesting deeper than 512 levels at offset")));
}

TEST(ParseGraderReplyTest, DuplicateKeysLastWins) {
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": "a",
                                   "criteria_met": false, "explanation": "b"})"),
              VerdictIs(false, "b"));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": "yes", "criteria_met": true})"),
              VerdictIs(true, kNoExplanation));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "criteria_met": 1})"),
              StatusIs(kDataLoss, "'criteria_met' is not a JSON boolean"));
}

TEST(ParseGraderReplyTest, ExplanationForms) {
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true})"), VerdictIs(true, kNoExplanation));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": ""})"),
              VerdictIs(true, ""));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": "caf\u00e9 \"q\"\n"})"),
              VerdictIs(true, "caf\u00e9 \"q\"\n"));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": NaN})"),
              VerdictIs(true, "NaN"));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": false, "explanation": -Infinity})"),
              VerdictIs(false, "-Infinity"));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": null})"),
              VerdictIs(true, "null"));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": 12})"),
              VerdictIs(true, "12"));
  // As json.dumps(value, ensure_ascii=False, separators=(",", ":")) prints what json.loads
  // made: floats by repr, "-0" as int 0, duplicate keys collapsed (first place, last value).
  EXPECT_THAT(ParseGraderReply(
                  R"({"criteria_met": true, "explanation": {"b": [1.0, 1e5, -0, -0.0, 1E-7, 2.50],
              "a": "\u00e9\t\u0001", "b": {"x": true, "y": null}, "c": 123456789012345678901}})"),
              VerdictIs(true,
                        "{\"b\":{\"x\":true,\"y\":null},\"a\":\"\u00e9\\t\\u0001\","
                        "\"c\":123456789012345678901}"));
  EXPECT_THAT(ParseGraderReply(
                  R"({"criteria_met": true, "explanation": [1.0, 1e5, -0, -0.0, 1E-7, 2.50]})"),
              VerdictIs(true, "[1.0,100000.0,0,-0.0,1e-07,2.5]"));
}

TEST(ParseGraderReplyTest, DocumentedDeviationsFromPythonJson) {
  // Python accepts these (inf, a lone surrogate); RapidJSON rejects them, so we retry.
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": 1e400})"),
              StatusIs(kDataLoss, HasSubstr("not valid JSON")));
  EXPECT_THAT(ParseGraderReply(R"({"criteria_met": true, "explanation": "\ud800"})"),
              StatusIs(kDataLoss, HasSubstr("not valid JSON")));
}

// ---- Cross-check against the reference's behaviour in Python --------------------------------

std::vector<std::string> TrickyReplies() {
  std::vector<std::string> replies = {
      "",
      "```json",
      "```",
      "````",
      "```json```",
      "{\"criteria_met\": true, \"explanation\": \"ok\"}",
      "```json\n{\"criteria_met\": false, \"explanation\": \"no\"}\n```",
      "```\n{\"criteria_met\": true}\n```",
      "```JSON\n{\"criteria_met\": true}\n```",
      "{\"criteria_met\": true}\n```",
      "{\"criteria_met\": true}\n```\n",
      "{\"criteria_met\": true}```json",
      "```json{\"criteria_met\":true}```",
      "```json  \u00a0{\"criteria_met\": true}\u3000```",
      "\u3000\u2028```json\n{\"criteria_met\": true}\n```\u2029\x1f",
      "\u200b{\"criteria_met\": true}",
      "\ufeff{\"criteria_met\": true}",
      "{\"criteria_met\": \"true\"}",
      "{\"criteria_met\": 1}",
      "{\"criteria_met\": 0}",
      "{\"criteria_met\": null}",
      "42",
      "\"criteria_met\"",
      "[\"criteria_met\"]",
      "[1, 2]",
      "true",
      "{\"criteria_met\": true, \"criteria_met\": false}",
      "{\"explanation\": \"x\", \"criteria_met\": true, \"explanation\": \"y\"}",
      "{\"criteria_met\": true, \"explanation\": NaN}",
      "{\"criteria_met\": true, \"explanation\": Infinity}",
      "{\"criteria_met\": true, \"explanation\": -Infinity}",
      "{\"criteria_met\": true, \"explanation\": -NaN}",
      "{\"criteria_met\": true, \"explanation\": Inf}",
      "{\"criteria_met\": true, \"explanation\": \"\"}",
      "{\"criteria_met\": true, \"explanation\": {\"k\": [1.0, 1e5, -0, 0.1, 1E+2], \"k\": 3}}",
      "{\"criteria_met\": true, \"explanation\": \"\\ud83d\\ude00 \\u00e9 \\/ \\b\"}",
      "{\"criteria_met\": true, \"explanation\": \"\\udc00\"}",
      "{\"criteria_met\": true, \"explanation\": \"\\u0000\\u001f\\u007f\"}",
      "{\"criteria_met\": true, \"explanation\": 01}",
      "{\"criteria_met\": true, \"explanation\": 1.}",
      "{\"criteria_met\": true, \"explanation\": .5}",
      "{\"criteria_met\": true, \"explanation\": 1e5}",
      "{\"criteria_met\": true,}",
      "{\"criteria_met\": true} {}",
      "{\"criteria_met\": tru}",
      "{'criteria_met': true}",
      "{\"criteria_met\": true, \"explanation\": \"a\nb\"}",
      "{\n\t\"criteria_met\" : false ,\r\n \"explanation\":\"multi\"\n}",
      "```json\n```json\n{\"criteria_met\": true}\n```\n```",
      "```json\n{\"criteria_met\": true}\n```\n```",
  };
  // Fuzz-ish combinations of fences, whitespace (ASCII and Unicode) and bodies.
  const std::vector<std::string> spaces = {"",       " ",      "\n",     "\t",   "\r\n",   "\u00a0",
                                           "\u3000", "\u2028", "\u0085", "\x1c", "\u200b", "\v\f"};
  const std::vector<std::string> openers = {"",         "",         "",        "```json",
                                            "```json",  "```json",  "```JSON", "```",
                                            "``` json", "```jsonc", "Answer:", "`"};
  const std::vector<std::string> closers = {"",   "",     "",        "```",  "```", "```",
                                            "``", "````", "```json", "` ``", ".",   "\n```x"};
  const std::vector<std::string> bodies = {
      "{\"criteria_met\": true, \"explanation\": \"Met.\"}",
      "{\"criteria_met\": false}",
      "{\"explanation\": \"dup\", \"criteria_met\": false, \"criteria_met\": true}",
      "{\"criteria_met\": \"false\"}",
      "{\"criteria_met\": true, \"explanation\": [NaN, {\"z\": 2.0}]}",
      "[\"criteria_met\", true]",
      "3.5",
      "{\"criteria_met\": true, \"explanation\": \"\u00e9\u3000\"}",
      "{\"criteria_met\": true",
  };
  std::mt19937 rng(20250512);
  const auto pick = [&rng](const std::vector<std::string>& v) -> const std::string& {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  for (int i = 0; i < 150; ++i) {
    replies.push_back(absl::StrCat(pick(spaces), pick(spaces), pick(openers), pick(spaces),
                                   pick(bodies), pick(spaces), pick(closers), pick(spaces),
                                   pick(spaces)));
  }
  return replies;
}

TEST(ParseGraderReplyTest, MatchesPythonReference) {
  const std::string python = "/usr/bin/python3";
  ASSERT_EQ(::access(python.c_str(), X_OK), 0) << python << " is required for this cross-check";
  const std::string script = hb::testing::SourceDir() + "/scripts/reference/parse_replies.py";
  const std::string dir = hb::testing::MakeTempDir();
  const std::string in_path = dir + "/replies.json";
  const std::string out_path = dir + "/results.json";

  const std::vector<std::string> replies = TrickyReplies();
  {
    std::ofstream in(in_path, std::ios::binary);
    in << "[";
    for (size_t i = 0; i < replies.size(); ++i) in << (i ? ",\n" : "") << JsonQuote(replies[i]);
    in << "]";
  }
  const std::string command = absl::StrCat(python, " ", script, " ", in_path, " ", out_path);
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  std::ifstream out(out_path, std::ios::binary);
  std::stringstream buffer;
  buffer << out.rdbuf();
  rapidjson::Document results;
  results.Parse(buffer.str().c_str());
  ASSERT_FALSE(results.HasParseError());
  ASSERT_TRUE(results.IsArray());
  ASSERT_EQ(results.Size(), replies.size());

  int accepted = 0;
  for (size_t i = 0; i < replies.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("reply #", i, ": ", JsonQuote(replies[i])));
    const rapidjson::Value& expected = results[static_cast<rapidjson::SizeType>(i)];
    const rapidjson::Value& cleaned = expected["cleaned"];
    EXPECT_EQ(StripGraderReplyFences(replies[i]),
              std::string(cleaned.GetString(), cleaned.GetStringLength()));
    const absl::StatusOr<Verdict> verdict = ParseGraderReply(replies[i]);
    if (!expected["ok"].GetBool()) {
      EXPECT_THAT(verdict, StatusIs(kDataLoss, HasSubstr("")));
      continue;
    }
    ++accepted;
    const rapidjson::Value& explanation = expected["explanation"];
    EXPECT_THAT(verdict,
                VerdictIs(expected["criteria_met"].GetBool(),
                          std::string(explanation.GetString(), explanation.GetStringLength())));
  }
  // The corpus must exercise both outcomes.
  EXPECT_GT(accepted, 20);
  EXPECT_LT(accepted, static_cast<int>(replies.size()) - 20);
}

}  // namespace
}  // namespace hb
