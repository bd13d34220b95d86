#include "cli/grader_flags.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"

namespace hb::cli {

void AddGraderSettingsFlags(Command& command, GraderSettings* settings, GraderApiChoice* api,
                            std::vector<std::string>* headers) {
  command.Flag("llm-model", &settings->model, "MODEL", "grader model (SPEC §5)");
  command.Flag("llm-temperature", &settings->temperature, "T",
               "grader sampling temperature (SPEC §5; chat completions only)");
  command.Flag("llm-max-tokens", &settings->max_tokens, "N",
               "grader max_tokens (SPEC §5; chat completions only); the system message is "
               "always the reference's \"You are a helpful assistant.\"");
  command.Flag("llm-api", api, "auto|chat|responses",
               "grader API: chat completions or OpenAI's Responses API (POST {base}/responses, "
               "body {model, input, reasoning}); auto, as simple-evals PR #108: responses for "
               "gpt-5*, o1*, o3*, o4* models or when --llm-reasoning-effort is given");
  command.Flag("llm-reasoning-effort", &settings->reasoning_effort, "low|medium|high",
               "the Responses grader's reasoning effort (empty: not sent; the HealthBench "
               "Professional grader is gpt-5.4-2026-03-05 at low)");
  command.Flag("llm-extra-body", &settings->extra_body, "JSON",
               "a JSON object merged into every grader request body, chat or Responses, online "
               "or batch (vLLM guided decoding: '{\"guided_json\":{...}}' or "
               "'{\"structured_outputs\":{...}}', '{\"response_format\":{...}}', "
               "'{\"chat_template_kwargs\":{...}}'); part of the grader's identity. model, "
               "messages, input and stream are refused, as are keys the body already has "
               "(temperature, max_tokens, reasoning: use their flags)");
  command.Repeated("llm-header", headers, "NAME=VALUE",
                   "an extra HTTP header of every grader request (repeatable: Azure's "
                   "api-key=KEY, a gateway's header); part of the grader's identity by name and "
                   "the sha256 of its value. Values are never logged or recorded; reports show "
                   "names only. Authorization is set from --llm-api-key-file instead");
}

absl::Status ResolveGraderSettingsFlags(const Command& command, GraderApiChoice api,
                                        const std::vector<std::string>& headers,
                                        GraderSettings* settings) {
  HB_RETURN_IF_ERROR(ResolveGraderSettings(api, command.Given("llm-temperature"),
                                           command.Given("llm-max-tokens"), *settings));
  HB_ASSIGN_OR_RETURN(settings->extra_body, CanonicalExtraBody(settings->extra_body));
  HB_ASSIGN_OR_RETURN(settings->headers, ParseGraderHeaders(headers));
  return ValidateGraderSettings(*settings);
}

std::vector<std::string> DefaultGraderTemplatePaths() {
  std::vector<std::string> paths;
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    paths.push_back(
        (exe.parent_path().parent_path() / "share/healthbench/grader_template.txt").string());
  }
  paths.push_back("/usr/share/healthbench/grader_template.txt");
  paths.push_back(std::string(HB_SOURCE_DIR) + "/data/grader_template.txt");
  return paths;
}

std::string ResolveGraderTemplatePath(const Command& command, const std::string& path) {
  if (command.Given("grader-template")) return path;
  const std::vector<std::string> defaults = DefaultGraderTemplatePaths();
  std::error_code error;
  for (const std::string& candidate : defaults) {
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  }
  return defaults.back();  // none exists: loading it names the flag and the path
}

void AddGraderTemplateFlags(Command& command, std::string* path, bool* require_reference) {
  path->clear();  // resolved by ResolveGraderTemplatePath, never against the working directory
  command.Flag("grader-template", path, "PATH",
               "grader prompt template (the reference's text, byte for byte). Default: the "
               "first that exists of BIN/../share/healthbench/grader_template.txt (BIN: the "
               "binary's folder), /usr/share/healthbench/grader_template.txt (the container "
               "image) and data/grader_template.txt of the source tree the binary was built "
               "from; never relative to the working directory");
  command.Bool("require-reference-template", require_reference,
               "refuse a template whose sha256 differs from the reference's (=false allows a "
               "synthetic template)");
}

void AddGraderFlags(Command& command, GraderFlags* flags, const std::string& group) {
  GraderStackOptions& stack = flags->stack;
  flags->command = &command;
  command.Group(group);
  command.Flag("llm-base-url", &stack.llm.base_url, "URL",
               "OpenAI-compatible endpoint; requests go to {base}/chat/completions (or "
               "{base}/responses, see --llm-api)");
  AddGraderSettingsFlags(command, &stack.settings, &flags->api, &flags->headers);
  command.Flag("llm-api-key-file", &flags->api_key_file, "PATH",
               "file holding the API key; when empty, $OPENAI_API_KEY is used; none is fine "
               "for local endpoints. The key is never logged");
  AddGraderTemplateFlags(command, &stack.template_path, &stack.require_reference_template);
  command.Flag("max-attempts", &stack.retry.max_attempts, "N",
               "upstream attempts per rubric item, the first included");
  command.Flag("backoff-base", &stack.retry.base, "DURATION",
               "first backoff ceiling (full jitter, doubling per attempt)");
  command.Flag("backoff-cap", &stack.retry.cap, "DURATION",
               "largest backoff ceiling; also caps a Retry-After on statuses other than 429 (a "
               "429's Retry-After is always waited out, within the caller's deadline)");
  command.Flag("attempt-timeout", &stack.llm.attempt_timeout, "DURATION",
               "timeout of one upstream attempt");
  command.Flag("max-upstream-in-flight", &stack.llm.max_upstream_in_flight, "N",
               "upstream requests in flight at once; more wait in a queue");
  command.Flag("max-message-bytes", &stack.limits.max_message_bytes, "N",
               "largest message content, reply or criterion accepted, in bytes");
  command.Flag("max-conversation-messages", &stack.limits.max_conversation_messages, "N",
               "most conversation turns accepted");
  command.Flag("max-rubric-items", &stack.limits.max_rubric_items, "N",
               "most rubric items per GradeReply");
  command.Flag("max-tags-per-item", &stack.limits.max_tags_per_item, "N",
               "most tags per rubric item");
  command.Flag("max-field-bytes", &stack.limits.max_field_bytes, "N",
               "largest short field accepted (each tag, points_text, request_id, "
               "prompt_cache_key), in bytes");
  command.Flag("max-prompt-bytes", &stack.limits.max_prompt_bytes, "N",
               "largest rendered grader prompt of one item (conversation, reply and rubric "
               "item, each <<rubric_item>> substitution counted), in bytes");
  command.Flag("verdict-cache", &stack.verdict_cache_path, "PATH",
               "SQLite file of accepted grader replies keyed by the sha256 of the exact request "
               "(model, settings, messages; shareable by several processes): a request already "
               "in it is answered from it at no cost instead of sampling the grader again. "
               "Opt-in: a hit reuses one sample of a temperature-0.5 grader. Empty: no cache");
  AddQuotaFlags(command, flags);
}

void AddQuotaFlags(Command& command, GraderFlags* flags) {
  QuotaSettings& quota = flags->stack.quota;
  command.Flag("quota-redis", &quota.redis_url, "URL",
               "share one provider quota with every process on this Redis "
               "(redis://[[user]:password@]host[:port][/db] or unix:///path[?db=N]): each "
               "upstream attempt takes a permit from the fleet's requests and tokens per minute "
               "(docs: Fleet quota). Unreachable or refusing at start: exit 2. Empty: off");
  command.Flag("quota-redis-password-file", &flags->quota_password_file, "PATH",
               "file holding the Redis password (wins over one in --quota-redis); never logged");
  command.Flag("quota-key", &quota.key, "NAME",
               "the shared budget's name (default: the base URL + sha256 of the API key, so "
               "processes with the same endpoint and key share one)");
  command.Flag("quota-rpm", &quota.rpm, "N",
               "the provider's requests per minute for the whole fleet (0: learned from "
               "x-ratelimit-limit-requests and shared)");
  command.Flag("quota-tpm", &quota.tpm, "N",
               "the provider's tokens per minute for the whole fleet (0: learned from "
               "x-ratelimit-limit-tokens and shared); a call counts its prompt bytes / 4 + "
               "--llm-max-tokens, settled against its usage");
  command.Flag("quota-priority", &quota.priority, "interactive|batch",
               "interactive callers may use the whole budget; batch callers leave half of it "
               "while interactive demand exists (an interactive call in the last 10 minutes)");
  command.Flag("quota-fallback-share", &quota.fallback_share, "F",
               "while Redis is unavailable, this process alone uses this share of the known "
               "limits (degraded: hb_grader_quota_degraded 1), in (0, 1]");
}

absl::StatusOr<std::string> ReadApiKey(const std::string& file_flag, const std::string& file,
                                       const char* env_name) {
  if (!file.empty()) {
    absl::StatusOr<std::string> key = ReadFile(file);
    if (!key.ok()) {
      return absl::Status(key.status().code(),
                          absl::StrCat("--", file_flag, ": cannot read ", file));
    }
    return std::string(absl::StripAsciiWhitespace(*key));
  }
  const char* env = std::getenv(env_name);
  return env == nullptr ? std::string() : std::string(absl::StripAsciiWhitespace(env));
}

absl::StatusOr<GraderStackOptions> ResolveGraderFlags(const GraderFlags& flags) {
  GraderStackOptions options = flags.stack;
  absl::StatusOr<std::string> key =
      ReadApiKey("llm-api-key-file", flags.api_key_file, "OPENAI_API_KEY");
  if (!key.ok()) return key.status();
  options.llm.api_key = *std::move(key);
  if (!flags.quota_password_file.empty()) {
    // A file only (ReadApiKey reads the variable only when no file is given).
    absl::StatusOr<std::string> password =
        ReadApiKey("quota-redis-password-file", flags.quota_password_file, "");
    if (!password.ok()) return password.status();
    options.quota.redis_password = *std::move(password);
  }
  options.llm.base_url_given = flags.command != nullptr && flags.command->Given("llm-base-url");
  if (flags.command != nullptr) {
    options.template_path = ResolveGraderTemplatePath(*flags.command, options.template_path);
    absl::Status settings =
        ResolveGraderSettingsFlags(*flags.command, flags.api, flags.headers, &options.settings);
    if (!settings.ok()) return settings;
  }
  return CompleteGraderStackOptions(std::move(options));
}

absl::Status CheckUpstreamFlagsAreEmbedded(const std::string& grader,
                                           const GraderStackOptions& options) {
  if (grader == kEmbeddedGrader) return absl::OkStatus();
  if (!options.verdict_cache_path.empty()) {
    return absl::InvalidArgumentError(
        "--verdict-cache is the embedded grader's: with a gRPC --grader, give --verdict-cache to "
        "the hb-grader replicas instead");
  }
  if (!options.quota.redis_url.empty()) {
    return absl::InvalidArgumentError(
        "--quota-redis is the embedded grader's: with a gRPC --grader, give --quota-redis (and "
        "the other --quota-* flags) to the hb-grader replicas instead");
  }
  return absl::OkStatus();
}

void AddPriceFlags(Command& command, TokenPrices* prices) {
  command.Flag(
      "price-input-per-mtok", &prices->input_per_mtok, "USD",
      "cost estimate: USD per million input tokens (default: the grader model's list "
      "price when known — gpt-4.1(-mini, -nano), o3, o4-mini, gpt-5.4(-mini, -nano), gpt-5.5 — "
      "else gpt-4.1's)");
  command.Flag("price-cached-input-per-mtok", &prices->cached_input_per_mtok, "USD",
               "USD per million cached input tokens");
  command.Flag("price-output-per-mtok", &prices->output_per_mtok, "USD",
               "USD per million output tokens");
}

bool PriceFlagsGiven(const Command& command) {
  for (const char* flag :
       {"price-input-per-mtok", "price-cached-input-per-mtok", "price-output-per-mtok"}) {
    if (command.Given(flag)) return true;
  }
  return false;
}

void DefaultPricesForModel(const Command& command, const std::string& model, TokenPrices* prices) {
  if (PriceFlagsGiven(command)) return;
  if (const std::optional<TokenPrices> list = ListPricesForModel(model)) *prices = *list;
}

std::vector<ExpectedGraderField> ExpectedRemoteGrader(const Command& command, bool professional,
                                                      GraderApiChoice api,
                                                      const GraderSettings& settings) {
  std::vector<ExpectedGraderField> expected;
  if (professional) {
    expected = ExpectedGraderFields(settings, {"model", "api", "reasoning_effort", "extra_body"},
                                    "--professional");
  }
  const std::pair<const char*, const char*> flags[] = {{"llm-model", "model"},
                                                       {"llm-temperature", "temperature"},
                                                       {"llm-max-tokens", "max_tokens"},
                                                       {"llm-api", "api"},
                                                       {"llm-reasoning-effort", "reasoning_effort"},
                                                       {"llm-extra-body", "extra_body"},
                                                       {"llm-header", "headers"}};
  for (const auto& [flag, name] : flags) {
    if (!command.Given(flag)) continue;
    if (std::string(flag) == "llm-api" && api == GraderApiChoice::kAuto) continue;
    for (ExpectedGraderField& field :
         ExpectedGraderFields(settings, {name}, absl::StrCat("--", flag))) {
      expected.push_back(std::move(field));
    }
  }
  return expected;
}

void AddLengthAdjustmentFlags(Command& command, LengthAdjustmentFlags* flags) {
  command.Flag("length-adjustment-center", &flags->center, "CHARS",
               "length-adjusted score (simple-evals PR #108): per task, score - P x "
               "(characters of the reply - CHARS) / 500, reported as "
               "overall_score_length_adjusted beside the raw score; give both flags or neither "
               "(HealthBench Professional: 2000)");
  command.Flag("length-adjustment-penalty-per-500-chars", &flags->penalty_per_500_chars, "P",
               "the penalty P of --length-adjustment-center (HealthBench Professional: 0.0147)");
}

absl::StatusOr<std::optional<LengthAdjustment>> ResolveLengthAdjustmentFlags(
    const Command& command, const LengthAdjustmentFlags& flags) {
  const bool center = command.Given("length-adjustment-center");
  const bool penalty = command.Given("length-adjustment-penalty-per-500-chars");
  if (!center && !penalty) return std::optional<LengthAdjustment>();
  if (center != penalty) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--length-adjustment-center and --length-adjustment-penalty-per-500-chars go together: "
        "add --",
        center ? "length-adjustment-penalty-per-500-chars" : "length-adjustment-center",
        " (HealthBench Professional: center 2000, penalty 0.0147)"));
  }
  if (!(flags.center >= 0 && flags.center < 1e15) ||
      !(flags.penalty_per_500_chars >= 0 && flags.penalty_per_500_chars < 1e15)) {
    return absl::InvalidArgumentError(
        "--length-adjustment-center and --length-adjustment-penalty-per-500-chars must be "
        "non-negative numbers");
  }
  return std::optional<LengthAdjustment>(
      LengthAdjustment{flags.center, flags.penalty_per_500_chars});
}

void AddProfessionalFlag(Command& command, bool* professional) {
  command.Bool("professional", professional,
               "HealthBench Professional as simple-evals PR #108 grades it: a Professional-format "
               "dataset, grader gpt-5.4-2026-03-05 through the Responses API at reasoning "
               "effort low, length adjustment center 2000 / penalty 0.0147 per 500 characters; "
               "a flag that contradicts the bundle is refused");
}

namespace {

absl::Status Contradicts(absl::string_view flag, absl::string_view given,
                         absl::string_view bundle) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--professional grades as simple-evals PR #108's HealthBench Professional bundle, with ",
      flag, "=", bundle, "; drop ", flag, "=", given, " (or drop --professional)"));
}

}  // namespace

absl::Status ApplyProfessionalGrader(const Command& command, GraderSettings* settings,
                                     GraderApiChoice* api) {
  if (command.Given("llm-model") && settings->model != kProfessionalGraderModel) {
    return Contradicts("--llm-model", settings->model, kProfessionalGraderModel);
  }
  if (command.Given("llm-reasoning-effort") &&
      settings->reasoning_effort != kProfessionalReasoningEffort) {
    return Contradicts("--llm-reasoning-effort", settings->reasoning_effort,
                       kProfessionalReasoningEffort);
  }
  if (command.Given("llm-api") && *api == GraderApiChoice::kChat) {
    return Contradicts("--llm-api", "chat", "responses");
  }
  if (!settings->extra_body.empty()) {
    return absl::InvalidArgumentError(
        "--professional sends the reference's request body exactly ({model, input, reasoning}); "
        "--llm-extra-body would change it and the score would not be comparable: drop "
        "--llm-extra-body (or drop --professional)");
  }
  settings->model = kProfessionalGraderModel;
  settings->reasoning_effort = kProfessionalReasoningEffort;
  *api = GraderApiChoice::kResponses;
  return absl::OkStatus();
}

absl::Status CheckProfessionalDataset(const std::string& dataset) {
  absl::StatusOr<DatasetFormat> format = DetectDatasetFormat(dataset);
  if (!format.ok()) return format.status();
  if (*format == DatasetFormat::kProfessional) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--professional needs a HealthBench Professional file (records with id, conversation, "
      "rubric_items: healthbench_professional_eval.jsonl of openai/healthbench-professional); ",
      dataset, " is in the HealthBench format"));
}

absl::StatusOr<std::optional<LengthAdjustment>> ResolveProfessionalLengthAdjustment(
    const Command& command, const LengthAdjustmentFlags& flags) {
  const LengthAdjustment bundle = kProfessionalLengthAdjustment;
  if (command.Given("length-adjustment-center") && flags.center != bundle.center) {
    return Contradicts("--length-adjustment-center", absl::StrCat(flags.center),
                       absl::StrCat(bundle.center));
  }
  if (command.Given("length-adjustment-penalty-per-500-chars") &&
      flags.penalty_per_500_chars != bundle.penalty_per_500_chars) {
    return Contradicts("--length-adjustment-penalty-per-500-chars",
                       absl::StrCat(flags.penalty_per_500_chars),
                       absl::StrCat(bundle.penalty_per_500_chars));
  }
  return std::optional<LengthAdjustment>(bundle);
}

void AddListenFlag(Command& command, std::string* address, const std::string& help) {
  command.Flag("listen", address, "HOST:PORT", help);
}

}  // namespace hb::cli
