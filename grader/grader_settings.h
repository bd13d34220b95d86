// Validation of GraderSettings (common/healthbench/types.h), the model settings every grader
// request carries, and the choice of API for them: one check shared by hb-grader,
// `hb-orchestrator run`, `dry-run`, `score` and hb-env.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

// The largest --llm-max-tokens accepted: no model answers with more (a grader verdict takes a few
// hundred tokens).
inline constexpr int kMaxGraderMaxTokens = 1000000;

// kInvalidArgument naming the flag when a setting cannot produce a valid request, so it is
// refused at start instead of being sent upstream ("--llm-max-tokens must be positive",
// "--llm-max-tokens must be at most 1000000, got N", "--llm-temperature must be in [0, 2] ...,
// got 9", "--llm-reasoning-effort must be low, medium or high,
// got 'x'", an effort on the chat API, an --llm-extra-body that is not a JSON object or sets a
// key the request already has: see ExtraBodyKeyRefusal). Thread-safe.
absl::Status ValidateGraderSettings(const GraderSettings& settings);

// --llm-extra-body as stored in GraderSettings::extra_body: `text` parsed and written back
// compact (members in their order), "" for "". kInvalidArgument naming the flag when it is not
// valid JSON or not an object.
absl::StatusOr<std::string> CanonicalExtraBody(absl::string_view text);

// Why `key` of an --llm-extra-body may not be sent with `settings`, or "" when it may: the
// model and the grader prompt (model, messages, input) are the reference's; a key the body
// already has for these settings has its own flag (temperature, max_tokens, reasoning);
// "stream" would turn the one JSON reply the grader parses into events.
std::string ExtraBodyKeyRefusal(const GraderSettings& settings, absl::string_view key);

// One --llm-header NAME=VALUE: NAME an HTTP token (RFC 9110: letters, digits and
// !#$%&'*+-.^_`|~), not one the client sets itself (Authorization: use --llm-api-key-file;
// Host, Content-Type, Content-Length, Transfer-Encoding, Connection); VALUE without CR, LF or
// NUL (a header cannot smuggle another). value_sha256 is filled. kInvalidArgument quoting the
// name (never the value) and saying how to fix it.
absl::StatusOr<GraderHeader> ParseGraderHeader(absl::string_view text);

// Every --llm-header (ParseGraderHeader); a name given twice (case-insensitive) is
// kInvalidArgument.
absl::StatusOr<std::vector<GraderHeader>> ParseGraderHeaders(const std::vector<std::string>& texts);

// The headers as the grader's identity holds them: "name:sha256" per header, names lower-cased,
// sorted, joined by ","; "" for none. Never a value.
std::string HeadersIdentity(const std::vector<GraderHeader>& headers);

// The headers as an HTTP request carries them: (name, value) in the order given.
std::vector<std::pair<std::string, std::string>> WireHeaders(
    const std::vector<GraderHeader>& headers);

// The headers for reports and --help-like output: "api-key: [redacted], X-Team: [redacted]"
// (names as given, values never shown); "" for none.
std::string RedactedHeaders(const std::vector<GraderHeader>& headers);

// HealthBench Professional's official grader (simple-evals PR #108): gpt-5.4-2026-03-05 at low
// reasoning effort, through the Responses API.
inline constexpr char kProfessionalGraderModel[] = "gpt-5.4-2026-03-05";
inline constexpr char kProfessionalReasoningEffort[] = "low";

// --llm-api: chat, responses, or auto (simple-evals PR #108's rule, see ResolveGraderApi).
enum class GraderApiChoice { kAuto, kChat, kResponses };
bool AbslParseFlag(absl::string_view text, GraderApiChoice* choice, std::string* error);
std::string AbslUnparseFlag(GraderApiChoice choice);

// Whether `model` is a reasoning model PR #108 grades through the Responses API: a name
// starting with gpt-5, o1, o3 or o4. (The reference lists gpt-5.5-2026-04-23,
// gpt-5.4-2026-03-05, gpt-5.4-mini-2026-03-17, o3-2025-04-16, o4-mini-2025-04-16 and o1-pro;
// the prefixes cover every one of them and their siblings.)
bool IsReasoningGraderModel(absl::string_view model);

// The API `choice` selects for `settings`: kAuto is the Responses API for a reasoning model
// (IsReasoningGraderModel) or whenever a reasoning effort is given, chat completions
// otherwise, as PR #108 routes its grader.
GraderApi ResolveGraderApi(GraderApiChoice choice, const GraderSettings& settings);

// Sets settings.api from `choice`, then refuses chat-only settings the user gave explicitly to a
// Responses grader (`temperature_given`, `max_tokens_given`: whether --llm-temperature /
// --llm-max-tokens were on the command line): kInvalidArgument saying why (the Responses
// grader of PR #108 sends neither; reasoning models refuse a temperature).
absl::Status ResolveGraderSettings(GraderApiChoice choice, bool temperature_given,
                                   bool max_tokens_given, GraderSettings& settings);

}  // namespace hb
