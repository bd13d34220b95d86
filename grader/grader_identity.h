// GraderIdentity: what a grader grades with, i.e. everything besides the graded conversation, the
// reply and the rubric item that can change a verdict. The ONE place where a grader setting
// becomes part of that identity: the run journal (JournalMeta), hb-env's result cache, replicas'
// agreement (CheckGradersAgree) and provenance all read it from here, so a setting added to the
// grader is added to IdentityFields once and every store keys on it.
//
// The verdict cache (grader/verdict_cache.h) keys on the exact upstream request body instead,
// which carries every field of the identity that goes on the wire (the extra body included);
// the --llm-header headers, which are not in the body, are added to that key
// (VerdictCacheKey).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"

namespace hb {

struct GraderIdentity {
  // Model, temperature, max_tokens, system message, API, reasoning effort, extra body, headers.
  GraderSettings settings;
  // sha256 (hex) of the grader template.
  std::string template_sha256;
};

// One field of an identity, as recorded and compared.
struct IdentityField {
  // As messages print it: "model", "temperature", ..., "template_sha256".
  std::string name;
  // The key it is recorded under in a run journal's meta ("grader_model", "template_sha256").
  std::string journal_key;
  // Its value as text; numbers as JSON numbers ("0.5", "2048").
  std::string value;
  // The flag that sets it, for the fix in an error ("--llm-model"); empty when none.
  std::string flag;
};

// Whether the requests of a grader on `api` carry the setting `name` (an IdentityField name):
// the Responses API (simple-evals PR #108) sends the model, the prompt and the reasoning effort,
// never a temperature, max_tokens or a system message; chat completions sends no reasoning
// effort. Provenance (summary.json, report.html) lists only what is sent; the identity's keys
// keep every field (a Responses grader's unsent ones are at their defaults, which
// ResolveGraderSettings enforces), so journals and caches stay valid.
bool SentOnApi(GraderApi api, absl::string_view name);

// The fields in a fixed order: model, temperature, max_tokens, system_message, template_sha256,
// then api (when not chat), reasoning_effort, extra_body and headers (each when set; headers
// as HeadersIdentity: lower-cased names and the sha256 of each value, never a value).
// A field added later is listed only when it differs from its default, so journals and caches
// written before it existed stay valid for graders that do not use it.
std::vector<IdentityField> IdentityFields(const GraderIdentity& identity);

// The flag that sets the field `name` ("--llm-model" for "model"), "" when none or unknown.
std::string IdentityFieldFlag(const std::string& name);

// The first field on which two identities differ: a's fields in order, then those only b lists
// (a field one side does not list is at its default there, compared as "").
struct IdentityDifference {
  std::string name;  // as in IdentityField
  std::string flag;  // as in IdentityField
  std::string a_value;
  std::string b_value;
};
std::optional<IdentityDifference> FirstIdentityDifference(const GraderIdentity& a,
                                                          const GraderIdentity& b);

// Hex sha256 of the fields' names and values (length-prefixed, so no two identities collide):
// the identity as one key. Thread-safe.
std::string IdentityFingerprint(const GraderIdentity& identity);

}  // namespace hb
