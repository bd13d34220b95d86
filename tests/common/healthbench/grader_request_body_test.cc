#include "common/healthbench/grader_request_body.h"

#include <string>

#include "common/healthbench/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

TEST(BuildChatCompletionBodyTest, ExactBytesForDefaults) {
  GraderSettings settings;
  EXPECT_EQ(BuildChatCompletionBody(settings, "P"),
            R"({"model":"gpt-4.1-2025-04-14","messages":[)"
            R"({"role":"system","content":"You are a helpful assistant."},)"
            R"({"role":"user","content":"P"}],"temperature":0.5,"max_tokens":2048})");
}

TEST(BuildChatCompletionBodyTest, PromptCacheKeyComesLast) {
  GraderSettings settings;
  settings.model = "m";
  settings.system_message = "S";
  settings.temperature = 1;
  settings.max_tokens = 7;
  EXPECT_EQ(BuildChatCompletionBody(settings, "P", "k"),
            R"({"model":"m","messages":[{"role":"system","content":"S"},)"
            R"({"role":"user","content":"P"}],"temperature":1.0,"max_tokens":7,)"
            R"("prompt_cache_key":"k"})");
}

TEST(BuildChatCompletionBodyTest, EscapesOnlyWhatJsonRequires) {
  GraderSettings settings;
  settings.model = "m";
  settings.system_message = "";
  settings.temperature = 0;
  settings.max_tokens = 1;
  // Quote, backslash, newline, tab, a control byte, a slash and non-ASCII UTF-8.
  std::string prompt = "a\"b\\c\nd\te\x01/f \xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D";
  std::string body = BuildChatCompletionBody(settings, prompt);
  EXPECT_EQ(body,
            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
            "\"a\\\"b\\\\c\\nd\\te\\u0001/f \xC3\xA9 \xE2\x80\x9Cq\xE2\x80\x9D\"}],"
            "\"temperature\":0.0,\"max_tokens\":1}");
  // And it parses back to the same prompt.
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  ASSERT_FALSE(doc.HasParseError());
  EXPECT_EQ(std::string(doc["messages"][0]["content"].GetString(),
                        doc["messages"][0]["content"].GetStringLength()),
            prompt);
}

TEST(BuildChatCompletionBodyTest, EmbeddedNulIsKept) {
  GraderSettings settings;
  std::string prompt("a\0b", 3);
  EXPECT_THAT(BuildChatCompletionBody(settings, prompt),
              ::testing::HasSubstr(R"("content":"a\u0000b")"));
}

}  // namespace
}  // namespace hb
