// GraderInfo (protos/healthbench/grader/v1/grader.proto): what a grader grades with. Built in
// one place from a grader's options (MakeGraderInfo), compared across replicas
// (CheckGradersAgree) and turned back into settings for the provenance of a run (SettingsOf).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/healthbench/types.h"
#include "grader/grader_identity.h"
#include "healthbench/grader/v1/grader.pb.h"

namespace hb {

// The info of a grader with `settings` and a template of `template_sha256`, calling
// `base_url` (redacted with RedactUrl: never a credential), built as `version`.
healthbench::grader::v1::GraderInfo MakeGraderInfo(const GraderSettings& settings,
                                                   const std::string& template_sha256,
                                                   const std::string& base_url,
                                                   const std::string& version);

// The identity `info` reports (settings and template sha256).
GraderIdentity IdentityOf(const healthbench::grader::v1::GraderInfo& info);

// The settings `info` reports (headers by name and value_sha256; their values are never sent).
GraderSettings SettingsOf(const healthbench::grader::v1::GraderInfo& info);

// One replica's answer: `replica` names it as the caller reached it ("ipv4:10.0.0.7:50051").
struct ReplicaInfo {
  std::string replica;
  healthbench::grader::v1::GraderInfo info;
};

// OK when every replica grades with the same identity (IdentityFields: the fields that change
// a verdict). Otherwise kFailedPrecondition naming
// the first differing field, two replicas and their values, and the fix ("start every hb-grader
// replica with the same --llm-model"). Replicas that differ only in upstream URL or version
// are accepted (a rolling upgrade, regional endpoints); `warnings` (optional) receives one line
// per such difference.
absl::Status CheckGradersAgree(const std::vector<ReplicaInfo>& replicas,
                               std::vector<std::string>* warnings = nullptr);

// A setting a command line asked its grader for, to be checked against what a remote grader
// reports (GetInfo) before anything is graded.
struct ExpectedGraderField {
  // An IdentityField name: "model", "api", "reasoning_effort", "temperature", ...
  std::string name;
  // As IdentityFields renders it; "" when the field is not listed (at its default).
  std::string value;
  // What asked for it, for the message: "--professional", "--llm-model".
  std::string source;
};

// The fields `names` of `settings` as IdentityFields renders them ("" for one it does not
// list), each with `source`.
std::vector<ExpectedGraderField> ExpectedGraderFields(const GraderSettings& settings,
                                                      const std::vector<std::string>& names,
                                                      const std::string& source);

// OK when `info` (what the replicas at `target` grade with; they agree, CheckGradersAgree) has
// every expected value. Otherwise kFailedPrecondition naming the first field that differs, who
// asked for it, what the replicas grade with and the fix: "--professional asks for a grader with
// model 'gpt-5.4-2026-03-05', but the hb-grader replicas at ipv4:10.0.0.7:50051 grade with
// model 'gpt-4.1-2025-04-14' (GetInfo); nothing was graded: start every replica with
// --llm-model=gpt-5.4-2026-03-05, or grade with --grader embedded".
absl::Status CheckGraderIsExpected(const std::vector<ExpectedGraderField>& expected,
                                   const healthbench::grader::v1::GraderInfo& info,
                                   const std::string& target);

}  // namespace hb
