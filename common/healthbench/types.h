// The HealthBench data model shared by every binary: conversations, rubric items, examples
// (tasks), model responses and grader settings. Plain structs; loaders live in dataset.h and
// responses.h.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hb {

// One chat turn.
struct Message {
  std::string role;
  std::string content;
  bool operator==(const Message& o) const { return role == o.role && content == o.content; }
};

// One physician-written rubric item.
struct RubricItem {
  std::string criterion;
  // The JSON number as a double (integers from -10 to 10 in the official data).
  double points = 0;
  // How Python prints the parsed JSON number: "10", "-6", "5.0". This is what the grader
  // prompt shows (SPEC §4.3), so a float 5.0 stays distinct from the integer 5.
  std::string points_text;
  std::vector<std::string> tags;
  // The meta-eval's rendering (SPEC §15): `criterion` is the raw rubric text, put into the
  // grader prompt as it stands, without the "[points] " prefix (RenderRubricItem).
  bool verbatim = false;
};

// `ideal_completions_data` of a record (physician modes only; kept for completeness).
struct IdealCompletions {
  std::string ideal_completion;
  std::string group;
  std::vector<std::string> ref_completions;
};

// One HealthBench record: a conversation ending with a user turn and its rubric.
struct Example {
  std::string prompt_id;
  std::vector<Message> prompt;
  std::vector<RubricItem> rubrics;
  std::vector<std::string> example_tags;
  std::optional<IdealCompletions> ideal_completions;
  // HealthBench Professional's slice fields (use_case, type, difficulty, specialty) present in
  // the record, in that order, as (field, value). Each is also in `example_tags` as
  // "<field>:<value>", so per-slice metrics come out beside theme and axis.
  std::vector<std::pair<std::string, std::string>> slices;
  // 1-based line of the record in its file.
  int line = 0;
};

// One row of the meta-eval file (SPEC §2.2): a conversation, a completion, one rubric
// criterion, and the physicians' labels on whether the completion meets it.
struct MetaEvalRow {
  std::vector<Message> prompt;
  std::string completion;
  // The raw criterion text: the grader sees it as is, with no "[points] " prefix.
  std::string rubric;
  // The consensus cluster, e.g. "cluster:emergency_referrals_emergent_emergency_behavior".
  std::string category;
  // One label per physician, parallel to `physician_ids` (anonymized_physician_ids).
  std::vector<bool> binary_labels;
  std::vector<std::string> physician_ids;
  // Carried for reports when the file has them ("" otherwise); the reference never reads them.
  std::string prompt_id;
  std::string completion_id;
  // 1-based line of the row in its file.
  int line = 0;
};

// One model response to grade: the next assistant turn for `prompt_id`.
struct Response {
  std::string prompt_id;
  std::string response;
  // The policy's system message, when it had one. It is part of the graded transcript
  // (SPEC §4.1, quirk 1).
  std::optional<std::string> system_prompt;
  int line = 0;
};

// Which OpenAI API the grader is called through. simple-evals PR #108 grades GPT-5.x and
// o-series models through the Responses API (POST /v1/responses), others through chat
// completions (POST /v1/chat/completions).
enum class GraderApi { kChatCompletions, kResponses };

// "chat" / "responses": flag values, reports, provenance.
inline const char* GraderApiName(GraderApi api) {
  return api == GraderApi::kResponses ? "responses" : "chat";
}
// The endpoint path under the base URL ("/chat/completions", "/responses").
inline const char* GraderApiPath(GraderApi api) {
  return api == GraderApi::kResponses ? "/responses" : "/chat/completions";
}
// The Batch API's `endpoint` and each input line's `url` ("/v1/chat/completions",
// "/v1/responses").
inline std::string GraderApiBatchUrl(GraderApi api) {
  return std::string("/v1") + GraderApiPath(api);
}

// One extra HTTP header of the grader's upstream requests (--llm-header NAME=VALUE). The value
// may be a secret: records (journal, summary.json, GraderInfo) keep only its sha256, and
// settings read back from a record have an empty `value`.
struct GraderHeader {
  std::string name;
  std::string value;
  // Hex sha256 of `value`: what the grader's identity holds.
  std::string value_sha256;
};

// How the grader model is called (SPEC §5). Defaults are the reference's. On the Responses
// API only `model` and `reasoning_effort` are sent (temperature, max_tokens and the system
// message are not: PR #108's grader sends none of them).
struct GraderSettings {
  std::string model = "gpt-4.1-2025-04-14";
  double temperature = 0.5;
  int max_tokens = 2048;
  std::string system_message = "You are a helpful assistant.";
  GraderApi api = GraderApi::kChatCompletions;
  // "low", "medium", "high", or empty (not sent: the model's default).
  std::string reasoning_effort;
  // --llm-extra-body: a compact JSON object whose members are added to every request body
  // after the fixed ones (vLLM guided decoding, response_format, chat_template_kwargs); empty:
  // none. Canonical (compact, members in the given order) once resolved: it is part of the
  // grader's identity byte for byte.
  std::string extra_body;
  // --llm-header: extra HTTP headers of every upstream request (Azure's api-key, gateways).
  std::vector<GraderHeader> headers;
};

// A grader's judgement of one rubric item.
struct Verdict {
  bool criteria_met = false;
  std::string explanation;
};

}  // namespace hb
