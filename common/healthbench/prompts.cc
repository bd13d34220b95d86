#include "common/healthbench/prompts.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/base/file.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace hb {
namespace {

constexpr absl::string_view kConversationPlaceholder = "<<conversation>>";
constexpr absl::string_view kRubricItemPlaceholder = "<<rubric_item>>";

}  // namespace

absl::StatusOr<GraderTemplate> GraderTemplate::FromText(std::string text, bool require_reference) {
  std::string digest = Sha256Hex(text);
  if (require_reference && digest != kGraderTemplateSha256) {
    return absl::InvalidArgumentError(
        absl::StrCat("grader template is not the reference template: sha256 expected ",
                     kGraderTemplateSha256, ", got ", digest));
  }
  for (absl::string_view placeholder : {kConversationPlaceholder, kRubricItemPlaceholder}) {
    if (!absl::StrContains(text, placeholder)) {
      return absl::InvalidArgumentError(
          absl::StrCat("grader template lacks the placeholder ", placeholder));
    }
  }
  return GraderTemplate(std::move(text), std::move(digest));
}

absl::StatusOr<GraderTemplate> GraderTemplate::Load(const std::string& path,
                                                    bool require_reference) {
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  absl::StatusOr<GraderTemplate> tmpl = FromText(std::move(text), require_reference);
  if (!tmpl.ok()) {
    return absl::Status(tmpl.status().code(), absl::StrCat(path, ": ", tmpl.status().message()));
  }
  return tmpl;
}

std::string GraderTemplate::Fill(absl::string_view conversation,
                                 absl::string_view rubric_item) const {
  return FillRubricItem(FillConversation(conversation), rubric_item);
}

GraderTemplate::WithConversation GraderTemplate::FillConversation(
    absl::string_view conversation) const {
  // Two passes, like the reference's chained str.replace: the second pass also sees the
  // conversation text (quirk 11). StrReplaceAll, like str.replace, never rescans what it
  // inserted, and replaces non-overlapping matches left to right, as counted here.
  WithConversation out;
  // absl::StrReplaceAll(text_, {{kConversationPlaceholder, conversation}}), in one allocation of
  // the exact size: the conversation may be megabytes.
  const std::vector<absl::string_view> pieces = absl::StrSplit(text_, kConversationPlaceholder);
  out.text.reserve(text_.size() + (pieces.size() - 1) * conversation.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out.text.append(conversation.data(), conversation.size());
    out.text.append(pieces[i].data(), pieces[i].size());
  }
  const absl::string_view text = out.text;
  for (size_t at = text.find(kRubricItemPlaceholder); at != absl::string_view::npos;
       at = text.find(kRubricItemPlaceholder, at + kRubricItemPlaceholder.size())) {
    ++out.rubric_item_slots;
  }
  return out;
}

size_t GraderTemplate::WithConversation::FilledBytes(size_t rubric_item_bytes) const {
  const size_t placeholders = rubric_item_slots * kRubricItemPlaceholder.size();
  return text.size() - placeholders + rubric_item_slots * rubric_item_bytes;
}

std::vector<absl::string_view> GraderTemplate::WithConversation::Segments() const {
  // StrSplit, like FillRubricItem's StrReplaceAll, takes non-overlapping matches left to right.
  return absl::StrSplit(text, kRubricItemPlaceholder);
}

std::string GraderTemplate::FillRubricItem(const WithConversation& partial,
                                           absl::string_view rubric_item) {
  return absl::StrReplaceAll(partial.text, {{kRubricItemPlaceholder, rubric_item}});
}

std::vector<Message> GradedConversation(const std::vector<Message>& prompt,
                                        const std::optional<std::string>& system_prompt,
                                        absl::string_view reply) {
  std::vector<Message> out;
  out.reserve(prompt.size() + 2);
  if (system_prompt.has_value()) out.push_back(Message{"system", *system_prompt});
  out.insert(out.end(), prompt.begin(), prompt.end());
  out.push_back(Message{"assistant", std::string(reply)});
  return out;
}

std::string RenderConversation(const std::vector<Message>& messages) {
  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += "\n\n";
    absl::StrAppend(&out, messages[i].role, ": ", messages[i].content);
  }
  return out;
}

std::string RenderGradedConversation(const std::vector<Message>& prompt, absl::string_view reply) {
  constexpr absl::string_view kAssistant = "assistant";
  size_t size = kAssistant.size() + 2 + reply.size();
  for (const Message& m : prompt) size += m.role.size() + 2 + m.content.size() + 2;
  std::string out;
  out.reserve(size);
  for (const Message& m : prompt) absl::StrAppend(&out, m.role, ": ", m.content, "\n\n");
  absl::StrAppend(&out, kAssistant, ": ", reply);
  return out;
}

std::string PythonPointsText(double points, bool is_float) {
  if (is_float || !std::isfinite(points) || points != std::floor(points)) {
    return PythonFloatRepr(points);
  }
  if (std::fabs(points) < 9.2e18) {
    return absl::StrCat(static_cast<int64_t>(points));
  }
  // An integral double beyond int64: its exact decimal value, as Python's int() would print.
  return absl::StrFormat("%.0f", points);
}

std::string RenderRubricItem(const RubricItem& item) {
  if (item.verbatim) return item.criterion;
  const std::string points =
      item.points_text.empty()
          ? PythonPointsText(item.points, item.points != std::floor(item.points))
          : item.points_text;
  return absl::StrCat("[", points, "] ", item.criterion);
}

std::string MetaEvalGraderPrompt(const GraderTemplate& tmpl, const MetaEvalRow& row) {
  return tmpl.Fill(RenderGradedConversation(row.prompt, row.completion),
                   RenderRubricItem(MetaEvalRubricItem(row)));
}

RubricItem MetaEvalRubricItem(const MetaEvalRow& row) {
  RubricItem item;
  item.criterion = row.rubric;
  item.points = 1;
  item.points_text = "1";
  item.verbatim = true;
  return item;
}

std::string TaskPromptText(const std::vector<Message>& prompt) {
  if (prompt.size() == 1) return prompt.front().content;
  return absl::StrCat(kMultiTurnTaskInstruction, RenderConversation(prompt));
}

}  // namespace hb
