#include "cli/grader_flags.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"

namespace hb::cli {

void AddGraderSettingsFlags(Command& command, GraderSettings* settings) {
  command.Flag("llm-model", &settings->model, "MODEL", "grader model (SPEC §5)");
  command.Flag("llm-temperature", &settings->temperature, "T",
               "grader sampling temperature (SPEC §5)");
  command.Flag("llm-max-tokens", &settings->max_tokens, "N",
               "grader max_tokens (SPEC §5); the system message is always the reference's "
               "\"You are a helpful assistant.\"");
}

void AddGraderTemplateFlags(Command& command, std::string* path, bool* require_reference) {
  command.Flag("grader-template", path, "PATH",
               "grader prompt template (the reference's text, byte for byte)");
  command.Bool("require-reference-template", require_reference,
               "refuse a template whose sha256 differs from the reference's (=false allows a "
               "synthetic template)");
}

void AddGraderFlags(Command& command, GraderFlags* flags, const std::string& group) {
  GraderStackOptions& stack = flags->stack;
  flags->command = &command;
  command.Group(group);
  command.Flag("llm-base-url", &stack.llm.base_url, "URL",
               "OpenAI-compatible endpoint; requests go to {base}/chat/completions");
  AddGraderSettingsFlags(command, &stack.settings);
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
  options.llm.base_url_given = flags.command != nullptr && flags.command->Given("llm-base-url");
  return CompleteGraderStackOptions(std::move(options));
}

absl::Status CheckVerdictCacheIsEmbedded(const std::string& grader,
                                         const GraderStackOptions& options) {
  if (grader == kEmbeddedGrader || options.verdict_cache_path.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--verdict-cache is the embedded grader's: with a gRPC --grader, give --verdict-cache to "
      "the hb-grader replicas instead");
}

void AddPriceFlags(Command& command, TokenPrices* prices) {
  command.Flag("price-input-per-mtok", &prices->input_per_mtok, "USD",
               "cost estimate: USD per million input tokens (gpt-4.1 list price)");
  command.Flag("price-cached-input-per-mtok", &prices->cached_input_per_mtok, "USD",
               "USD per million cached input tokens");
  command.Flag("price-output-per-mtok", &prices->output_per_mtok, "USD",
               "USD per million output tokens");
}

void AddListenFlag(Command& command, std::string* address, const std::string& help) {
  command.Flag("listen", address, "HOST:PORT", help);
}

}  // namespace hb::cli
