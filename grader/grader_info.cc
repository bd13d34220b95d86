#include "grader/grader_info.h"

#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "http/url_redaction.h"

namespace hb {
namespace {

using healthbench::grader::v1::GraderInfo;

struct Field {
  const char* name;
  // The flag of hb-grader that sets it (the fix), empty when none.
  const char* flag;
  std::function<std::string(const GraderInfo&)> value;
};

const std::vector<Field>& InformationalFields() {
  static const auto* fields = new std::vector<Field>{
      {"upstream_base_url", "--llm-base-url",
       [](const GraderInfo& i) { return i.upstream_base_url(); }},
      {"version", "", [](const GraderInfo& i) { return i.version(); }},
  };
  return *fields;
}

std::string Difference(const Field& field, const ReplicaInfo& a, const ReplicaInfo& b) {
  return absl::StrCat("graders disagree on ", field.name, ": replica ", a.replica, " has '",
                      field.value(a.info), "', replica ", b.replica, " has '", field.value(b.info),
                      "'");
}

// kFailedPrecondition naming the first identity field `a` and `b` differ on, with the fix.
absl::Status CheckSameIdentity(const ReplicaInfo& a, const ReplicaInfo& b) {
  const std::optional<IdentityDifference> d =
      FirstIdentityDifference(IdentityOf(a.info), IdentityOf(b.info));
  if (!d.has_value()) return absl::OkStatus();
  const std::string fix =
      d->flag.empty() ? "run the same hb-grader build and settings on every replica"
                      : absl::StrCat("start every hb-grader replica with the same ", d->flag);
  return absl::FailedPreconditionError(absl::StrCat(
      "graders disagree on ", d->name, ": replica ", a.replica, " has '", d->a_value, "', replica ",
      b.replica, " has '", d->b_value, "'; their verdicts would not be comparable: ", fix));
}

}  // namespace

GraderInfo MakeGraderInfo(const GraderSettings& settings, const std::string& template_sha256,
                          const std::string& base_url, const std::string& version) {
  GraderInfo info;
  info.set_model(settings.model);
  info.set_temperature(settings.temperature);
  info.set_max_tokens(settings.max_tokens);
  info.set_system_message(settings.system_message);
  info.set_template_sha256(template_sha256);
  info.set_api(GraderApiName(settings.api));
  info.set_reasoning_effort(settings.reasoning_effort);
  info.set_extra_body(settings.extra_body);
  for (const GraderHeader& header : settings.headers) {
    healthbench::grader::v1::GraderHeaderInfo* out = info.add_headers();
    out->set_name(header.name);
    out->set_value_sha256(header.value_sha256);
  }
  info.set_upstream_base_url(RedactUrl(base_url));
  info.set_version(version);
  return info;
}

GraderIdentity IdentityOf(const GraderInfo& info) {
  return GraderIdentity{SettingsOf(info), info.template_sha256()};
}

GraderSettings SettingsOf(const GraderInfo& info) {
  GraderSettings settings;
  settings.model = info.model();
  settings.temperature = info.temperature();
  settings.max_tokens = info.max_tokens();
  settings.system_message = info.system_message();
  settings.api = info.api() == GraderApiName(GraderApi::kResponses) ? GraderApi::kResponses
                                                                    : GraderApi::kChatCompletions;
  settings.reasoning_effort = info.reasoning_effort();
  settings.extra_body = info.extra_body();
  for (const auto& header : info.headers()) {
    settings.headers.push_back(GraderHeader{header.name(), "", header.value_sha256()});
  }
  return settings;
}

namespace {

// The value `fields` lists under `name`, "" when it does not list it.
const IdentityField* FindField(const std::vector<IdentityField>& fields, const std::string& name) {
  for (const IdentityField& field : fields) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

// A value as a message shows it: an unlisted api is chat, any other unlisted field none.
std::string Shown(const std::string& name, const std::string& value) {
  if (!value.empty()) return absl::StrCat("'", value, "'");
  return name == "api" ? "'chat'" : "none";
}

}  // namespace

std::vector<ExpectedGraderField> ExpectedGraderFields(const GraderSettings& settings,
                                                      const std::vector<std::string>& names,
                                                      const std::string& source) {
  const std::vector<IdentityField> fields = IdentityFields(GraderIdentity{settings, ""});
  std::vector<ExpectedGraderField> expected;
  for (const std::string& name : names) {
    const IdentityField* field = FindField(fields, name);
    expected.push_back({name, field == nullptr ? "" : field->value, source});
  }
  return expected;
}

absl::Status CheckGraderIsExpected(const std::vector<ExpectedGraderField>& expected,
                                   const GraderInfo& info, const std::string& target) {
  const std::vector<IdentityField> fields = IdentityFields(IdentityOf(info));
  for (const ExpectedGraderField& want : expected) {
    const IdentityField* has = FindField(fields, want.name);
    const std::string value = has == nullptr ? "" : has->value;
    if (value == want.value) continue;
    const std::string flag = IdentityFieldFlag(want.name);
    const std::string fix =
        want.name == "api" ? absl::StrCat("--llm-api=", want.value.empty() ? "chat" : want.value)
        : flag.empty()     ? absl::StrCat("the same ", want.name)
                           : absl::StrCat(flag, "=", want.value);
    return absl::FailedPreconditionError(absl::StrCat(
        want.source, " asks for a grader with ", want.name, " ", Shown(want.name, want.value),
        ", but the hb-grader replicas at ", target, " grade with ", want.name, " ",
        Shown(want.name, value), " (GetInfo); nothing was graded: start every replica with ", fix,
        ", or grade with --grader embedded"));
  }
  return absl::OkStatus();
}

absl::Status CheckGradersAgree(const std::vector<ReplicaInfo>& replicas,
                               std::vector<std::string>* warnings) {
  if (replicas.empty()) return absl::OkStatus();
  const ReplicaInfo& first = replicas.front();
  for (size_t i = 1; i < replicas.size(); ++i) {
    HB_RETURN_IF_ERROR(CheckSameIdentity(first, replicas[i]));
    if (warnings == nullptr) continue;
    for (const Field& field : InformationalFields()) {
      if (field.value(first.info) != field.value(replicas[i].info)) {
        warnings->push_back(Difference(field, first, replicas[i]));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace hb
