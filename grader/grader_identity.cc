#include "grader/grader_identity.h"

#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "common/base/sha256.h"
#include "grader/grader_settings.h"

namespace hb {

bool SentOnApi(GraderApi api, absl::string_view name) {
  if (api == GraderApi::kResponses) {
    return name != "temperature" && name != "max_tokens" && name != "system_message";
  }
  return name != "reasoning_effort";
}

std::vector<IdentityField> IdentityFields(const GraderIdentity& identity) {
  const GraderSettings& s = identity.settings;
  std::vector<IdentityField> fields = {
      {"model", "grader_model", s.model, "--llm-model"},
      {"temperature", "grader_temperature", JsonNumber(s.temperature), "--llm-temperature"},
      {"max_tokens", "grader_max_tokens", absl::StrCat(s.max_tokens), "--llm-max-tokens"},
      {"system_message", "grader_system_message", s.system_message, ""},
      {"template_sha256", "template_sha256", identity.template_sha256, "--grader-template"},
  };
  // Added with the Responses API (simple-evals PR #108): listed only when not the default.
  if (s.api != GraderApi::kChatCompletions) {
    fields.push_back({"api", "grader_api", GraderApiName(s.api), "--llm-api"});
  }
  if (!s.reasoning_effort.empty()) {
    fields.push_back({"reasoning_effort", "grader_reasoning_effort", s.reasoning_effort,
                      "--llm-reasoning-effort"});
  }
  // Added with any OpenAI-compatible judge (--llm-extra-body, --llm-header): listed only when
  // set. Headers by name and the sha256 of their values, never a value.
  if (!s.extra_body.empty()) {
    fields.push_back({"extra_body", "grader_extra_body", s.extra_body, "--llm-extra-body"});
  }
  if (!s.headers.empty()) {
    fields.push_back({"headers", "grader_headers", HeadersIdentity(s.headers), "--llm-header"});
  }
  return fields;
}

std::string IdentityFieldFlag(const std::string& name) {
  // An identity that lists every field.
  GraderIdentity every;
  every.settings.api = GraderApi::kResponses;
  every.settings.reasoning_effort = "low";
  every.settings.extra_body = "{}";
  every.settings.headers = {GraderHeader{"x", "", ""}};
  for (const IdentityField& field : IdentityFields(every)) {
    if (field.name == name) return field.flag;
  }
  return "";
}

namespace {

// The value `fields` lists under `name`, "" when it does not list it.
std::string ValueOf(const std::vector<IdentityField>& fields, const std::string& name) {
  for (const IdentityField& field : fields) {
    if (field.name == name) return field.value;
  }
  return "";
}

}  // namespace

std::optional<IdentityDifference> FirstIdentityDifference(const GraderIdentity& a,
                                                          const GraderIdentity& b) {
  const std::vector<IdentityField> fa = IdentityFields(a);
  const std::vector<IdentityField> fb = IdentityFields(b);
  for (const IdentityField& field : fa) {
    const std::string other = ValueOf(fb, field.name);
    if (field.value != other) return IdentityDifference{field.name, field.flag, field.value, other};
  }
  for (const IdentityField& field : fb) {
    const std::string other = ValueOf(fa, field.name);
    if (field.value != other) return IdentityDifference{field.name, field.flag, other, field.value};
  }
  return std::nullopt;
}

std::string IdentityFingerprint(const GraderIdentity& identity) {
  std::string text;
  for (const IdentityField& field : IdentityFields(identity)) {
    absl::StrAppend(&text, field.name.size(), ":", field.name, "=", field.value.size(), ":",
                    field.value, "\n");
  }
  return Sha256Hex(text);
}

}  // namespace hb
