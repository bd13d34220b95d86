#include "common/healthbench/prompts.h"

#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::kPython;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

RubricItem Item(double points, std::string points_text, std::string criterion) {
  RubricItem item;
  item.points = points;
  item.points_text = std::move(points_text);
  item.criterion = std::move(criterion);
  return item;
}

TEST(RenderTest, SpecRenderingCase) {
  // SPEC §16.3: prompt [user "hi"], system "S", reply "R".
  std::vector<Message> convo = GradedConversation({{"user", "hi"}}, std::string("S"), "R");
  EXPECT_EQ(RenderConversation(convo), "system: S\n\nuser: hi\n\nassistant: R");
  EXPECT_EQ(RenderRubricItem(Item(-6, "-6", "x")), "[-6] x");
  // points_text empty: derived from points.
  EXPECT_EQ(RenderRubricItem(Item(-6, "", "x")), "[-6] x");
}

TEST(RenderTest, NoSystemPromptMeansNoSystemTurn) {
  std::vector<Message> convo =
      GradedConversation({{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}}, std::nullopt, "");
  ASSERT_EQ(convo.size(), 4u);
  EXPECT_EQ(convo.back(), (Message{"assistant", ""}));
  // An empty reply still renders its "assistant: " turn.
  EXPECT_EQ(RenderConversation(convo), "user: q1\n\nassistant: a1\n\nuser: q2\n\nassistant: ");
  // An empty-string system prompt is still a (truthy-or-not) message the caller chose to send.
  EXPECT_EQ(GradedConversation({{"user", "q"}}, std::string(""), "r").front(),
            (Message{"system", ""}));
}

TEST(RenderTest, ContentIsVerbatim) {
  // No trimming, escaping or capitalisation.
  std::vector<Message> convo = {{"User", "  a\n\nb  "}, {"x", "\xC3\xA9\t\"q\""}};
  EXPECT_EQ(RenderConversation(convo), "User:   a\n\nb  \n\nx: \xC3\xA9\t\"q\"");
  EXPECT_EQ(RenderConversation({}), "");
}

TEST(RenderTest, FloatPointsKeepTheirPythonForm) {
  EXPECT_EQ(RenderRubricItem(Item(5.0, "5.0", "crit")), "[5.0] crit");
  EXPECT_EQ(RenderRubricItem(Item(2.5, "", "y")), "[2.5] y");
  EXPECT_EQ(RenderRubricItem(Item(10, "", "z")), "[10] z");
}

TEST(PythonPointsTextTest, IntegersAndFloats) {
  EXPECT_EQ(PythonPointsText(10, false), "10");
  EXPECT_EQ(PythonPointsText(-6, false), "-6");
  EXPECT_EQ(PythonPointsText(0, false), "0");
  EXPECT_EQ(PythonPointsText(5, true), "5.0");
  EXPECT_EQ(PythonPointsText(-0.5, true), "-0.5");
  EXPECT_EQ(PythonPointsText(1e20, true), "1e+20");
  EXPECT_EQ(PythonPointsText(1e20, false), "100000000000000000000");
  EXPECT_EQ(PythonPointsText(0.25, false), "0.25");  // not integral: float repr anyway
}

TEST(TaskPromptTextTest, SingleMessageIsVerbatim) {
  EXPECT_EQ(TaskPromptText({{"user", "  hello\n"}}), "  hello\n");
}

TEST(TaskPromptTextTest, MultiTurnHasInstructionThenTranscript) {
  EXPECT_EQ(TaskPromptText({{"user", "q1"}, {"assistant", "a1"}, {"user", "q2"}}),
            "Continue the conversation below by writing the assistant's reply to the final "
            "user message.\n\nuser: q1\n\nassistant: a1\n\nuser: q2");
}

TEST(GraderTemplateTest, FillReplacesEveryPlaceholderInOrder) {
  HB_ASSERT_OK_AND_ASSIGN(
      GraderTemplate tmpl,
      GraderTemplate::FromText("A <<conversation>> B <<rubric_item>> C <<conversation>>", false));
  EXPECT_EQ(tmpl.Fill("conv", "item"), "A conv B item C conv");
  EXPECT_EQ(tmpl.sha256(), Sha256Hex(tmpl.text()));
}

TEST(GraderTemplateTest, RubricItemPlaceholderInConversationIsReplacedToo) {
  // Quirk 11: the second replace also hits the conversation text.
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate tmpl,
                          GraderTemplate::FromText("[<<conversation>>|<<rubric_item>>]", false));
  EXPECT_EQ(tmpl.Fill("user: <<rubric_item>>", "[5] c"), "[user: [5] c|[5] c]");
  // But a <<conversation>> inside the rubric item stays (it is substituted second).
  EXPECT_EQ(tmpl.Fill("c", "<<conversation>>"), "[c|<<conversation>>]");
  // Replacements are not rescanned: an item that contains its own placeholder stays put.
  EXPECT_EQ(tmpl.Fill("c", "<<rubric_item>>"), "[c|<<rubric_item>>]");
}

TEST(GraderTemplateTest, SegmentsJoinedByTheItemAreTheSecondPass) {
  HB_ASSERT_OK_AND_ASSIGN(
      GraderTemplate tmpl,
      GraderTemplate::FromText("<<rubric_item>>[<<conversation>>|<<rubric_item>>]", false));
  for (const char* conversation :
       {"", "c", "user: <<rubric_item>><<rubric_item>>", "<<rubric_item", "<<<rubric_item>>>"}) {
    const GraderTemplate::WithConversation partial = tmpl.FillConversation(conversation);
    EXPECT_EQ(partial.Segments().size(), partial.rubric_item_slots + 1) << conversation;
    EXPECT_EQ(absl::StrJoin(partial.Segments(), "[5] c"),
              GraderTemplate::FillRubricItem(partial, "[5] c"))
        << conversation;
    EXPECT_EQ(GraderTemplate::FillRubricItem(partial, "[5] c"), tmpl.Fill(conversation, "[5] c"));
  }
}

TEST(RenderTest, RenderGradedConversationIsRenderOfTheGradedConversationOnTheRealRecords) {
  HB_ASSERT_OK_AND_ASSIGN(Dataset dataset,
                          LoadDataset(hb::testing::SharedDataFile(hb::testing::kMainHead30), {}));
  ASSERT_FALSE(dataset.examples.empty());
  for (const Example& example : dataset.examples) {
    for (const std::string reply : {"", "Call emergency services.\n\nuser: x"}) {
      EXPECT_EQ(RenderGradedConversation(example.prompt, reply),
                RenderConversation(GradedConversation(example.prompt, std::nullopt, reply)))
          << example.prompt_id;
    }
  }
}

TEST(GraderTemplateTest, MissingPlaceholdersAreRejected) {
  EXPECT_THAT(GraderTemplate::FromText("only <<rubric_item>>", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<<conversation>>")));
  EXPECT_THAT(GraderTemplate::FromText("only <<conversation>>", false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<<rubric_item>>")));
}

TEST(GraderTemplateTest, RequireReferenceChecksTheHash) {
  std::string text = "x <<conversation>> <<rubric_item>>";
  EXPECT_THAT(GraderTemplate::FromText(text, true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(std::string("expected ") + kGraderTemplateSha256),
                             HasSubstr("got " + Sha256Hex(text)))));
}

TEST(GraderTemplateTest, LoadsTheReferenceTemplate) {
  std::string path = hb::testing::ReferenceTemplatePath();
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate tmpl, GraderTemplate::Load(path));
  EXPECT_EQ(tmpl.sha256(), kGraderTemplateSha256);
  EXPECT_EQ(Sha256Hex(tmpl.text()), kGraderTemplateSha256);
  EXPECT_EQ(tmpl.text().size(), 3181u);
  EXPECT_THAT(tmpl.text(), StartsWith("Your job is"));
  // The upstream typos are kept.
  EXPECT_THAT(tmpl.text(), HasSubstr("critera"));
}

TEST(GraderTemplateTest, LoadErrorsNameThePath) {
  std::string dir = hb::testing::MakeTempDir();
  EXPECT_THAT(GraderTemplate::Load(dir + "/absent.txt"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir + "/absent.txt")));
  std::string edited = dir + "/edited.txt";
  ASSERT_THAT(WriteFileAtomically(edited, "<<conversation>> <<rubric_item>> edited"),
              hb::testing::IsOk());
  EXPECT_THAT(GraderTemplate::Load(edited),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(edited), HasSubstr(kGraderTemplateSha256))));
  HB_ASSERT_OK_AND_ASSIGN(GraderTemplate custom, GraderTemplate::Load(edited, false));
  EXPECT_EQ(custom.Fill("c", "i"), "c i edited");
  std::string broken = dir + "/broken.txt";
  ASSERT_THAT(WriteFileAtomically(broken, "no placeholders"), hb::testing::IsOk());
  EXPECT_THAT(GraderTemplate::Load(broken, false),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(broken), HasSubstr("<<conversation>>"))));
}

// ---- Golden prompts from the real records, cross-checked with an independent Python
// rendering (scripts/reference/render_prompts.py). ----

// A synthetic reply: non-ASCII, a blank line, and a literal <<rubric_item>> (quirk 11).
constexpr char kReply[] =
    "Synthetic reply \xE2\x80\x94 see a clinician.\n\nCaf\xC3\xA9 \"quoted\" <<rubric_item>> end";
constexpr char kSystem[] = "You are a helpful assistant.";
constexpr int kSystemEvery = 3;

class GoldenPromptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HB_ASSERT_OK_AND_ASSIGN(tmpl_, GraderTemplate::Load(hb::testing::ReferenceTemplatePath()));
    HB_ASSERT_OK_AND_ASSIGN(dataset_,
                            LoadDataset(hb::testing::SharedDataFile(hb::testing::kMainHead30), {}));
  }
  // What the C++ side sends for item `item` of example `index`.
  std::string Filled(size_t index, size_t item) const {
    const Example& example = dataset_.examples[index];
    std::optional<std::string> system;
    if (index % kSystemEvery == 0) system = kSystem;
    return tmpl_->Fill(RenderConversation(GradedConversation(example.prompt, system, kReply)),
                       RenderRubricItem(example.rubrics[item]));
  }

  std::optional<GraderTemplate> tmpl_;
  Dataset dataset_;
};

TEST_F(GoldenPromptsTest, AllMainRowsMatchThePythonRendering) {
  ASSERT_EQ(::access(kPython, X_OK), 0)
      << kPython << " is missing: run scripts/setup.sh (it installs the reference Python)";
  const std::string dir = hb::testing::MakeTempDir();
  ASSERT_THAT(WriteFileAtomically(dir + "/reply.txt", kReply), hb::testing::IsOk());
  ASSERT_THAT(WriteFileAtomically(dir + "/system.txt", kSystem), hb::testing::IsOk());
  const hb::testing::ProcessResult python = hb::testing::RunProcess(
      {kPython, hb::testing::SourceDir() + "/scripts/reference/render_prompts.py", "--data",
       hb::testing::SharedDataFile(hb::testing::kMainHead30), "--template",
       hb::testing::ReferenceTemplatePath(), "--reply-file", dir + "/reply.txt", "--system-file",
       dir + "/system.txt", "--system-every", absl::StrCat(kSystemEvery)});
  ASSERT_EQ(python.exit_code, 0) << python.err;
  const std::string& output = python.out;

  // One JSON line per rubric row, in file order.
  std::vector<std::string> lines = absl::StrSplit(output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 352u);
  size_t row = 0;
  for (size_t index = 0; index < dataset_.examples.size(); ++index) {
    const Example& example = dataset_.examples[index];
    for (size_t item = 0; item < example.rubrics.size(); ++item, ++row) {
      ASSERT_LT(row, lines.size());
      rapidjson::Document doc;
      doc.Parse(lines[row].data(), lines[row].size());
      ASSERT_FALSE(doc.HasParseError()) << lines[row];
      ASSERT_EQ(std::string(doc["prompt_id"].GetString()), example.prompt_id);
      ASSERT_EQ(doc["item"].GetUint64(), item);
      std::string expected(doc["prompt"].GetString(), doc["prompt"].GetStringLength());
      // Byte-identical; print only a short diagnostic on failure.
      EXPECT_TRUE(Filled(index, item) == expected)
          << "row " << row << " (" << example.prompt_id << " item " << item << ") differs";
    }
  }
  EXPECT_EQ(row, 352u);
}

TEST_F(GoldenPromptsTest, HandPickedRecords) {
  bool saw_single = false, saw_multi = false, saw_non_ascii = false, saw_negative = false;
  for (size_t index = 0; index < dataset_.examples.size(); ++index) {
    const Example& example = dataset_.examples[index];
    std::string conversation =
        RenderConversation(GradedConversation(example.prompt, std::nullopt, "R"));
    std::string filled = tmpl_->Fill(conversation, RenderRubricItem(example.rubrics[0]));
    // The transcript sits in the template verbatim and ends with the reply turn.
    EXPECT_THAT(filled, HasSubstr(conversation));
    EXPECT_THAT(conversation, ::testing::EndsWith("\n\nassistant: R"));
    EXPECT_THAT(filled, ::testing::Not(HasSubstr("<<conversation>>")));
    if (example.prompt.size() == 1) {
      saw_single = true;
      EXPECT_EQ(conversation, "user: " + example.prompt[0].content + "\n\nassistant: R");
      EXPECT_EQ(TaskPromptText(example.prompt), example.prompt[0].content);
    } else {
      saw_multi = true;
      // Every turn appears, in order, each behind a blank line.
      size_t pos = 0;
      for (size_t t = 0; t < example.prompt.size(); ++t) {
        std::string turn = absl::StrCat(t == 0 ? "" : "\n\n", example.prompt[t].role, ": ",
                                        example.prompt[t].content);
        size_t found = conversation.find(turn, pos);
        ASSERT_NE(found, std::string::npos) << example.prompt_id << " turn " << t;
        if (t == 0) {
          EXPECT_EQ(found, 0u);
        }
        pos = found + turn.size();
      }
      EXPECT_EQ(conversation.substr(pos), "\n\nassistant: R");
      EXPECT_THAT(conversation, HasSubstr("\n\nassistant: "));
      EXPECT_THAT(TaskPromptText(example.prompt), ::testing::StartsWith(kMultiTurnTaskInstruction));
    }
    for (const Message& m : example.prompt) {
      for (unsigned char c : m.content) {
        if (c >= 0x80) saw_non_ascii = true;
      }
    }
    if (saw_non_ascii) {
      // Non-ASCII bytes pass through unchanged.
      EXPECT_THAT(filled, HasSubstr(example.prompt.back().content));
    }
    for (const RubricItem& item : example.rubrics) {
      std::string rendered = RenderRubricItem(item);
      if (item.points < 0) {
        saw_negative = true;
        EXPECT_THAT(rendered, ::testing::StartsWith("[-"));
        EXPECT_EQ(rendered, absl::StrCat("[", static_cast<int>(item.points), "] ", item.criterion));
        EXPECT_THAT(tmpl_->Fill(conversation, rendered), HasSubstr("[-"));
      }
    }
  }
  EXPECT_TRUE(saw_single);
  EXPECT_TRUE(saw_multi);
  EXPECT_TRUE(saw_non_ascii);
  EXPECT_TRUE(saw_negative);
}

}  // namespace
}  // namespace hb
