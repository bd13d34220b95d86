// Reusable flag groups over cli::Command, each filling an Options struct of the library that
// owns it: the grader/LLM group (hb-grader, `hb-orchestrator run`, hb-env), its parts (the
// offline subcommands take only some), token prices and a server's listen address.
//
// The flags' defaults are the structs' defaults; validation stays with the structs' libraries
// (CompleteGraderStackOptions, ValidateGraderSettings, ValidateTokenPrices).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command_line.h"
#include "common/grading/scoring.h"
#include "common/healthbench/types.h"
#include "grader/grader_info.h"
#include "grader/grader_settings.h"
#include "grader/grader_stack_options.h"
#include "grader_client/grader_connection.h"
#include "llm/token_prices.h"

namespace hb::cli {

// --llm-model, --llm-temperature, --llm-max-tokens, --llm-api (into `*api`),
// --llm-reasoning-effort, --llm-extra-body, --llm-header (repeatable, raw NAME=VALUE texts
// into `*headers`).
void AddGraderSettingsFlags(Command& command, GraderSettings* settings, GraderApiChoice* api,
                            std::vector<std::string>* headers);

// After parsing: settings->api from --llm-api (ResolveGraderSettings: auto follows
// simple-evals PR #108), refusing --llm-temperature / --llm-max-tokens given to a Responses
// grader; the extra body made canonical (CanonicalExtraBody) and the --llm-header texts parsed
// (ParseGraderHeaders) into settings->headers; then ValidateGraderSettings. kInvalidArgument
// naming the flag (never a header's value).
absl::Status ResolveGraderSettingsFlags(const Command& command, GraderApiChoice api,
                                        const std::vector<std::string>& headers,
                                        GraderSettings* settings);

// --grader-template PATH, --require-reference-template. The path has no default value: when
// the flag is not given, ResolveGraderTemplatePath finds the template.
void AddGraderTemplateFlags(Command& command, std::string* path, bool* require_reference);

// Where --grader-template is looked for when not given, in order: BIN/../share/healthbench/
// grader_template.txt (BIN: the running binary's folder: an installed prefix),
// /usr/share/healthbench/grader_template.txt (the container image), and the source tree's
// data/grader_template.txt (where scripts/fetch_data.sh puts it: a build-tree binary). Never
// relative to the working directory.
std::vector<std::string> DefaultGraderTemplatePaths();

// The template path to load: `path` as given when --grader-template was given (an empty value
// stays empty: `score` then records no template); else the first of
// DefaultGraderTemplatePaths() that exists, or (none does) the source tree's, whose loading then
// fails naming --grader-template (`run`). ResolveGraderFlags calls it.
std::string ResolveGraderTemplatePath(const Command& command, const std::string& path);

// What the grader/LLM group fills. The API key is not a flag: see ResolveGraderFlags.
struct GraderFlags {
  GraderStackOptions stack;
  GraderApiChoice api = GraderApiChoice::kAuto;
  // --llm-header texts, parsed by ResolveGraderFlags.
  std::vector<std::string> headers;
  std::string api_key_file;
  // --quota-redis-password-file, read by ResolveGraderFlags.
  std::string quota_password_file;
  // The command the group was added to (AddGraderFlags), asked which flags were given.
  const Command* command = nullptr;
};

// The whole grader/LLM group: the settings and template flags above, plus --llm-base-url,
// --llm-api-key-file, --max-attempts, --backoff-base, --backoff-cap, --attempt-timeout,
// --max-upstream-in-flight, --max-message-bytes, --max-conversation-messages,
// --max-rubric-items, --max-tags-per-item, --max-field-bytes, --max-prompt-bytes,
// --verdict-cache, and the fleet quota's (AddQuotaFlags). Listed in help under `group`.
void AddGraderFlags(Command& command, GraderFlags* flags, const std::string& group = "grader");

// The fleet's shared provider quota (grader/grader_stack_options.h QuotaSettings):
// --quota-redis, --quota-redis-password-file, --quota-key, --quota-rpm, --quota-tpm,
// --quota-priority, --quota-fallback-share. The priority's default is
// flags->stack.quota.priority as set before the call (hb-env: interactive; others: batch).
void AddQuotaFlags(Command& command, GraderFlags* flags);

// An API key: the contents of `file` (trailing whitespace trimmed) when given, else $`env_name`
// (trimmed), else "". An unreadable file keeps its read error's code and names --`file_flag`
// and the path (never the key).
absl::StatusOr<std::string> ReadApiKey(const std::string& file_flag, const std::string& file,
                                       const char* env_name);

// The parsed group as complete, validated GraderStackOptions: the API key is read from
// --llm-api-key-file (trailing whitespace trimmed) or else $OPENAI_API_KEY (none is fine for
// local endpoints); the quota's Redis password from --quota-redis-password-file (trimmed
// likewise); llm.base_url_given says whether --llm-base-url was given. Errors:
// kInvalidArgument naming the flag (never the key); an unreadable key file keeps its read error's
// code and names the path.
absl::StatusOr<GraderStackOptions> ResolveGraderFlags(const GraderFlags& flags);

// kInvalidArgument when --verdict-cache or --quota-redis is given to a process whose grader is
// the gRPC target `grader` rather than "embedded": the cache and the fleet quota belong to the
// process that calls the upstream, so the message sends them to the hb-grader replicas.
absl::Status CheckUpstreamFlagsAreEmbedded(const std::string& grader,
                                           const GraderStackOptions& options);

// --price-input-per-mtok, --price-cached-input-per-mtok, --price-output-per-mtok.
void AddPriceFlags(Command& command, TokenPrices* prices);

// Whether any --price-* flag was given.
bool PriceFlagsGiven(const Command& command);

// After parsing: when none of the --price-* flags was given, the grader `model`'s list prices
// (ListPricesForModel) replace the gpt-4.1 defaults; a model without list prices keeps them.
void DefaultPricesForModel(const Command& command, const std::string& model, TokenPrices* prices);

// --length-adjustment-center C, --length-adjustment-penalty-per-500-chars P (simple-evals
// PR #108's length-adjusted score; both or neither).
struct LengthAdjustmentFlags {
  double center = 0;
  double penalty_per_500_chars = 0;
};
void AddLengthAdjustmentFlags(Command& command, LengthAdjustmentFlags* flags);

// After parsing: std::nullopt when neither flag was given; the adjustment when both were;
// kInvalidArgument when only one was, or either is negative (or not finite).
absl::StatusOr<std::optional<LengthAdjustment>> ResolveLengthAdjustmentFlags(
    const Command& command, const LengthAdjustmentFlags& flags);

// --professional: the HealthBench Professional bundle of simple-evals PR #108.
void AddProfessionalFlag(Command& command, bool* professional);

// After parsing, when --professional is given: the grader becomes kProfessionalGraderModel at
// kProfessionalReasoningEffort through the Responses API. A contradicting explicit flag
// (another --llm-model, --llm-reasoning-effort or --llm-api=chat) is kInvalidArgument naming it
// and the bundle's value (the binaries exit 2 before any request).
absl::Status ApplyProfessionalGrader(const Command& command, GraderSettings* settings,
                                     GraderApiChoice* api);

// Under --professional: kInvalidArgument unless `dataset` is a HealthBench Professional file
// (DetectDatasetFormat); read errors keep their codes.
absl::Status CheckProfessionalDataset(const std::string& dataset);

// ResolveLengthAdjustmentFlags under --professional: the bundle's center 2000 and penalty 0.0147,
// each flag, when given, must say the same (kInvalidArgument otherwise).
absl::StatusOr<std::optional<LengthAdjustment>> ResolveProfessionalLengthAdjustment(
    const Command& command, const LengthAdjustmentFlags& flags);

// After parsing, for a gRPC --grader: the settings this command line asked the grader for, to be
// checked against what the replicas report (CheckGraderIsExpected): under --professional the
// bundle's model, API, reasoning effort and no extra body; each of --llm-model,
// --llm-temperature, --llm-max-tokens, --llm-api (chat or responses), --llm-reasoning-effort,
// --llm-extra-body and --llm-header that was given. `settings` are the resolved ones.
std::vector<ExpectedGraderField> ExpectedRemoteGrader(const Command& command, bool professional,
                                                      GraderApiChoice api,
                                                      const GraderSettings& settings);

// --listen HOST:PORT (port 0 picks a free port), with `*address` as the default.
void AddListenFlag(Command& command, std::string* address, const std::string& help);

}  // namespace hb::cli
