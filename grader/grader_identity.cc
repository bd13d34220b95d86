#include "grader/grader_identity.h"

#include "absl/strings/str_cat.h"
#include "common/base/json.h"
#include "common/base/sha256.h"

namespace hb {

std::vector<IdentityField> IdentityFields(const GraderIdentity& identity) {
  const GraderSettings& s = identity.settings;
  return {
      {"model", "grader_model", s.model, "--llm-model"},
      {"temperature", "grader_temperature", JsonNumber(s.temperature), "--llm-temperature"},
      {"max_tokens", "grader_max_tokens", absl::StrCat(s.max_tokens), "--llm-max-tokens"},
      {"system_message", "grader_system_message", s.system_message, ""},
      {"template_sha256", "template_sha256", identity.template_sha256, "--grader-template"},
  };
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
