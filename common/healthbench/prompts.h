// Prompt rendering, byte-exact with the reference (SPEC §4): the conversation a grader sees,
// the rubric item, the filled grader template, and the task prompt a policy model sees.
//
// The grader template is third-party text loaded from a file (never compiled in):
//   HB_ASSIGN_OR_RETURN(GraderTemplate tmpl, GraderTemplate::Load(path));
//   std::string prompt = tmpl.Fill(RenderConversation(convo), RenderRubricItem(item));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

// sha256 of the reference template (SPEC §4.4).
inline constexpr char kGraderTemplateSha256[] =
    "2adffd51fd259554ebcd036ad1072d4aa2b7ce3aec2bbffe36271f911632ed3c";

// The grader prompt template with its `<<conversation>>` and `<<rubric_item>>` placeholders.
class GraderTemplate {
 public:
  // Loads the template from `path` byte for byte. kInvalidArgument when a placeholder is
  // missing; when `require_reference` is true, also when the sha256 differs from
  // kGraderTemplateSha256 (the message gives both hashes: "sha256 expected <ref>, got <x>").
  // Every error message names the path; read errors keep ReadFile's code (kNotFound, ...).
  static absl::StatusOr<GraderTemplate> Load(const std::string& path,
                                             bool require_reference = true);
  // From text already in memory (tests); same checks as Load.
  static absl::StatusOr<GraderTemplate> FromText(std::string text, bool require_reference);

  // Replaces every `<<conversation>>` with `conversation`, then every `<<rubric_item>>` in the
  // result with `rubric_item` (so a literal `<<rubric_item>>` inside the conversation is
  // replaced too: SPEC §4.4 quirk 11).
  std::string Fill(absl::string_view conversation, absl::string_view rubric_item) const;

  // The first pass of Fill, shared by every rubric item of one reply (rendered once, not once
  // per item): the template with `conversation` in place, and how many `<<rubric_item>>` the
  // second pass will replace (the template's and any inside the conversation).
  struct WithConversation {
    std::string text;
    size_t rubric_item_slots = 0;
    // The size of FillRubricItem's result for a rubric item of `rubric_item_bytes`, computed
    // without rendering (a conversation full of `<<rubric_item>>` multiplies the item).
    size_t FilledBytes(size_t rubric_item_bytes) const;
    // `text` cut at each `<<rubric_item>>` (rubric_item_slots + 1 pieces, views into `text`):
    // FillRubricItem(*this, r) == absl::StrJoin(Segments(), r).
    std::vector<absl::string_view> Segments() const;
  };
  WithConversation FillConversation(absl::string_view conversation) const;
  // The second pass: Fill(c, r) == FillRubricItem(FillConversation(c), r), byte for byte.
  static std::string FillRubricItem(const WithConversation& partial, absl::string_view rubric_item);

  const std::string& text() const { return text_; }
  const std::string& sha256() const { return sha256_; }

 private:
  GraderTemplate(std::string text, std::string sha256)
      : text_(std::move(text)), sha256_(std::move(sha256)) {}
  std::string text_;
  std::string sha256_;
};

// The transcript the grader judges: the optional system message, the prompt turns, then the
// reply as an "assistant" turn.
std::vector<Message> GradedConversation(const std::vector<Message>& prompt,
                                        const std::optional<std::string>& system_prompt,
                                        absl::string_view reply);

// "<role>: <content>" per message, joined by "\n\n" (SPEC §4.2).
std::string RenderConversation(const std::vector<Message>& messages);

// RenderConversation(GradedConversation(prompt, std::nullopt, reply)), without copying the
// messages and in one allocation of the exact size (the grader renders conversations of up to
// max_prompt_bytes).
std::string RenderGradedConversation(const std::vector<Message>& prompt, absl::string_view reply);

// "[<points_text>] <criterion>" (SPEC §4.3). Uses item.points_text, or, when it is empty,
// PythonPointsText(points, /*is_float=*/points is not integral): "[-6] x", "[2.5] y".
// A verbatim item (the meta-eval's raw rubric, SPEC §15) is its criterion as is.
std::string RenderRubricItem(const RubricItem& item);

// How Python prints a points value that came from JSON: an integral JSON integer prints as
// "10"; `is_float` (the JSON literal had a fraction or exponent) prints Python's float repr
// ("5.0", "1e+20"). A non-integral or non-finite value always prints as a float repr.
std::string PythonPointsText(double points, bool is_float);

// The grader prompt of one meta-eval row, as the reference's meta-eval renders it (SPEC §15):
// the row's prompt plus {assistant: completion} rendered as RenderConversation, then the raw
// `rubric` string as the rubric item (no "[points] " prefix: MetaEvalRubricItem is verbatim).
//   tmpl.Fill(RenderGradedConversation(row.prompt, row.completion), row.rubric)
std::string MetaEvalGraderPrompt(const GraderTemplate& tmpl, const MetaEvalRow& row);

// The rubric item the grader is sent for a meta-eval row: criterion = row.rubric, verbatim, so
// RenderRubricItem gives row.rubric unchanged (points 1, which the prompt never shows).
RubricItem MetaEvalRubricItem(const MetaEvalRow& row);

// The instruction line TaskPromptText puts before a rendered multi-turn prompt (a project
// choice: the reference sends the message list itself, SPEC §3).
inline constexpr char kMultiTurnTaskInstruction[] =
    "Continue the conversation below by writing the assistant's reply to the final user "
    "message.\n\n";

// The task prompt a policy model sees (the environment view), as one text. A single-message
// prompt is returned verbatim (its content, whatever its role); an empty or multi-turn prompt
// is kMultiTurnTaskInstruction followed by RenderConversation(prompt), i.e. exactly
//   "Continue the conversation below by writing the assistant's reply to the final user
//   message.\n\nuser: <q1>\n\nassistant: <a1>\n\nuser: <q2>"
std::string TaskPromptText(const std::vector<Message>& prompt);

}  // namespace hb
