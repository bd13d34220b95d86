#include "common/healthbench/grader_request_body.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

GraderSettings Gpt54Low() {
  GraderSettings settings;
  settings.model = "gpt-5.4-2026-03-05";
  settings.api = GraderApi::kResponses;
  settings.reasoning_effort = "low";
  return settings;
}

// simple-evals PR #108's grader body: model, one user turn, the effort; nothing else (the
// chat settings' temperature, max_tokens and system message are not sent).
TEST(BuildResponsesBodyTest, ExactlyModelInputAndReasoning) {
  const std::string expected =
      R"({"model":"gpt-5.4-2026-03-05","input":[{"role":"user","content":"P \"q\"\n"}],)"
      R"("reasoning":{"effort":"low"}})";
  EXPECT_EQ(BuildResponsesBody(Gpt54Low(), "P \"q\"\n"), expected);
  EXPECT_EQ(BuildGraderRequestBody(Gpt54Low(), "P \"q\"\n"), expected);
  GraderSettings no_effort = Gpt54Low();
  no_effort.reasoning_effort.clear();
  EXPECT_EQ(BuildGraderRequestBody(no_effort, "P", "k"),
            R"({"model":"gpt-5.4-2026-03-05","input":[{"role":"user","content":"P"}],)"
            R"("prompt_cache_key":"k"})");
  // The chat API is still the default.
  EXPECT_EQ(BuildGraderRequestBody(GraderSettings{}, "P"),
            BuildChatCompletionBody(GraderSettings{}, "P"));
}

// --llm-extra-body: its members follow the fixed keys, in their order, before prompt_cache_key,
// on both APIs; the shared per-reply pieces carry it too.
TEST(BuildGraderRequestBodyTest, ExtraBodyMembersFollowTheFixedKeys) {
  GraderSettings chat;
  chat.extra_body = R"({"guided_json":{"type":"object"},"chat_template_kwargs":{"x":1}})";
  EXPECT_EQ(BuildGraderRequestBody(chat, "P", "k"),
            R"({"model":"gpt-4.1-2025-04-14","messages":[)"
            R"({"role":"system","content":"You are a helpful assistant."},)"
            R"({"role":"user","content":"P"}],"temperature":0.5,"max_tokens":2048,)"
            R"("guided_json":{"type":"object"},"chat_template_kwargs":{"x":1},)"
            R"("prompt_cache_key":"k"})");
  GraderSettings responses = Gpt54Low();
  responses.extra_body = R"({"text":{"format":{"type":"json_object"}}})";
  EXPECT_EQ(BuildGraderRequestBody(responses, "P"),
            R"({"model":"gpt-5.4-2026-03-05","input":[{"role":"user","content":"P"}],)"
            R"("reasoning":{"effort":"low"},"text":{"format":{"type":"json_object"}}})");
  const std::vector<absl::string_view> segments = {"conv [", "] tail"};
  const SharedChatCompletionBody shared(chat, segments, "k");
  EXPECT_EQ(JoinParts(shared.Parts("item")),
            BuildGraderRequestBody(chat, absl::StrJoin(segments, "item"), "k"));
}

TEST(SharedChatCompletionBodyTest, ResponsesBodiesAreByteIdenticalToo) {
  const std::vector<absl::string_view> segments = {"conv \xC3\xA9 [", "] tail \"x\""};
  const SharedChatCompletionBody shared(Gpt54Low(), segments, "");
  EXPECT_EQ(JoinParts(shared.Parts("[5] item\n")),
            BuildResponsesBody(Gpt54Low(), absl::StrJoin(segments, "[5] item\n")));
}

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

// JSON escaping works byte by byte, so the pieces escaped apart join into the same bytes:
// quotes, backslashes, control bytes, NUL, UTF-8 and invalid UTF-8 on either side of a slot.
TEST(SharedChatCompletionBodyTest, JoinedPartsAreBuildChatCompletionBody) {
  GraderSettings no_system;
  no_system.system_message = "";
  no_system.temperature = std::nan("");
  const std::vector<std::vector<std::string>> cases = {
      {""},
      {"only one segment"},
      {"", ""},
      {"before \"q\" \\", " after\n\t\x01"},
      {"\xC3", "\xA9 split UTF-8", std::string("nul\0byte", 8), "\xE2\x80\x9C"},
      {"a", "", "", "z"}};
  const std::vector<std::string> items = {"", "[5] c", "[-3] \"quoted\" \\ \x1f \xC3\xA9"};
  for (const GraderSettings& settings : {GraderSettings{}, no_system}) {
    for (const char* key : {"", "prompt-1"}) {
      for (const auto& case_segments : cases) {
        const std::vector<absl::string_view> segments(case_segments.begin(), case_segments.end());
        const SharedChatCompletionBody body(settings, segments, key);
        for (const std::string& item : items) {
          EXPECT_EQ(JoinParts(body.Parts(item)),
                    BuildChatCompletionBody(settings, absl::StrJoin(segments, item), key))
              << absl::StrJoin(segments, "|") << " / " << item;
        }
      }
    }
  }
}

TEST(SharedChatCompletionBodyTest, TheItemsOfOneReplyShareEveryPieceButTheItem) {
  const std::vector<absl::string_view> segments = {"before ", " middle ", " after"};
  const SharedChatCompletionBody body(GraderSettings{}, segments, "");
  const auto a = body.Parts("[1] a");
  const auto b = body.Parts("[2] b");
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (size_t i = 0; i < a.size(); i += 2) EXPECT_EQ(a[i].get(), b[i].get()) << i;  // shared
  EXPECT_EQ(*a[1], "[1] a");
  EXPECT_EQ(a[1].get(), a[3].get());  // one escaped item, referenced at every slot
}

TEST(SharedChatCompletionBodyTest, SameBytesAsTheWholeBodyOnTheRealRecords) {
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate tmpl,
                          GraderTemplate::Load(hb::testing::ReferenceTemplatePath()));
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset,
                          LoadDataset(hb::testing::SharedDataFile(hb::testing::kMainHead30), {}));
  size_t checked = 0;
  for (const Example& example : dataset.examples) {
    const std::string conversation = RenderGradedConversation(example.prompt, "See a doctor.");
    const GraderTemplate::WithConversation partial = tmpl.FillConversation(conversation);
    const SharedChatCompletionBody body(GraderSettings{}, partial.Segments(), example.prompt_id);
    for (const RubricItem& item : example.rubrics) {
      const std::string rubric_item = RenderRubricItem(item);
      ASSERT_EQ(JoinParts(body.Parts(rubric_item)),
                BuildChatCompletionBody(GraderSettings{}, tmpl.Fill(conversation, rubric_item),
                                        example.prompt_id))
          << example.prompt_id;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 352u);  // every rubric row of the sample
}

}  // namespace
}  // namespace hb
