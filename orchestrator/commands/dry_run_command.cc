// `hb-orchestrator dry-run`: the exact grader requests of a run, plus a cost estimate.
#include <algorithm>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/json_io.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"
#include "common/healthbench/responses.h"
#include "grader/grader_settings.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb {
namespace {

using commands_internal::ApplyExamples;
using commands_internal::CheckExamples;
using commands_internal::Require;
using commands_internal::WriteOutput;

constexpr int64_t kBytesPerToken = 4;
// OpenAI prompt caching: prefixes of at least 1024 tokens, cached in 128-token steps.
constexpr int64_t kMinCachedTokens = 1024;
constexpr int64_t kCacheStepTokens = 128;

int64_t EstimateTokens(size_t bytes) {
  return (static_cast<int64_t>(bytes) + kBytesPerToken - 1) / kBytesPerToken;
}

size_t CommonPrefix(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string RequestLine(const std::string& prompt_id, size_t rubric_index,
                        const std::string& body) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("prompt_id");
  WriteJsonString(writer, prompt_id);
  writer.Key("rubric_index");
  writer.Uint64(rubric_index);
  writer.Key("request_sha256");
  writer.String(Sha256Hex(body));
  writer.Key("request");
  // The body is spliced verbatim: re-serializing a parsed copy could change its bytes.
  writer.RawValue(body.data(), body.size(), rapidjson::kObjectType);
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

absl::StatusOr<DryRunEstimate> DryRun(const DryRunOptions& options) {
  HB_RETURN_IF_ERROR(Require("dataset", options.dataset));
  HB_RETURN_IF_ERROR(Require("responses", options.responses));
  HB_RETURN_IF_ERROR(Require("out", options.out));
  HB_RETURN_IF_ERROR(Require("grader-template", options.grader_template));
  HB_RETURN_IF_ERROR(CheckExamples(options.examples));
  HB_RETURN_IF_ERROR(ValidateGraderSettings(options.grader));
  HB_RETURN_IF_ERROR(ValidateTokenPrices(options.prices));
  HB_RETURN_IF_ERROR(ValidateBatchPriceFactor(options.batch_price_factor));
  if (options.est_output_tokens_per_row < 0) {
    return absl::InvalidArgumentError("--est-output-tokens-per-row must not be negative");
  }
  if (options.est_reasoning_tokens_per_row.value_or(0) < 0) {
    return absl::InvalidArgumentError("--est-reasoning-tokens-per-row must not be negative");
  }
  HB_ASSIGN_OR_RETURN(
      GraderTemplate tmpl,
      GraderTemplate::Load(options.grader_template, options.require_reference_template));
  HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(options.dataset, {}));
  HB_ASSIGN_OR_RETURN(ResponseSet responses, LoadResponses(options.responses, dataset));
  ApplyExamples(dataset, options.examples);

  DryRunEstimate estimate;
  std::string out;
  // The Responses grader sends no system message (simple-evals PR #108).
  const size_t system_bytes =
      options.grader.api == GraderApi::kChatCompletions ? options.grader.system_message.size() : 0;
  for (const Example& example : dataset.examples) {
    ++estimate.tasks;
    const Response* response = responses.Find(example.prompt_id);
    if (response == nullptr) continue;
    ++estimate.tasks_with_response;
    const std::string conversation = RenderConversation(
        GradedConversation(example.prompt, response->system_prompt, response->response));
    std::string first_prompt;
    for (size_t i = 0; i < example.rubrics.size(); ++i) {
      std::string prompt = tmpl.Fill(conversation, RenderRubricItem(example.rubrics[i]));
      std::string body = BuildGraderRequestBody(
          options.grader, prompt, options.prompt_cache_key_per_task ? example.prompt_id : "");
      rapidjson::Document check;
      if (!ParseJson(body, check).ok() || !check.IsObject()) {
        return absl::InternalError(absl::StrCat("request body for prompt_id '", example.prompt_id,
                                                "' rubric_index ", i, " is not a JSON object"));
      }
      absl::StrAppend(&out, RequestLine(example.prompt_id, i, body), "\n");
      ++estimate.rows;
      estimate.input_tokens += EstimateTokens(system_bytes + prompt.size());
      if (i == 0) {
        first_prompt = std::move(prompt);
      } else {
        int64_t shared = EstimateTokens(system_bytes + CommonPrefix(first_prompt, prompt));
        if (shared >= kMinCachedTokens) {
          estimate.cached_input_tokens += shared / kCacheStepTokens * kCacheStepTokens;
        }
      }
    }
  }
  estimate.reasoning_left_out = options.grader.api == GraderApi::kResponses &&
                                !options.est_reasoning_tokens_per_row.has_value();
  estimate.reasoning_tokens = estimate.rows * options.est_reasoning_tokens_per_row.value_or(0);
  estimate.output_tokens =
      estimate.rows * options.est_output_tokens_per_row + estimate.reasoning_tokens;
  estimate.cost_per_100_reasoning_tokens_per_row =
      CostUsd({0, 0, estimate.rows * 100}, options.prices);
  estimate.cost_uncached =
      CostUsd({estimate.input_tokens, 0, estimate.output_tokens}, options.prices);
  estimate.cost_best_cached =
      CostUsd({estimate.input_tokens, estimate.cached_input_tokens, estimate.output_tokens},
              options.prices);
  HB_RETURN_IF_ERROR(WriteOutput(options.out, out));
  return estimate;
}

namespace {

// What the output estimate counts, after "estimated output tokens: N ".
std::string OutputTokensBasis(const DryRunOptions& options, const DryRunEstimate& estimate) {
  const int64_t visible = options.est_output_tokens_per_row;
  if (options.est_reasoning_tokens_per_row.has_value()) {
    return absl::StrFormat(
        "(%d visible + %d reasoning per row, --est-reasoning-tokens-per-row; reasoning tokens "
        "are billed as output)",
        visible, *options.est_reasoning_tokens_per_row);
  }
  if (!estimate.reasoning_left_out) return absl::StrFormat("(%d per row)", visible);
  return absl::StrFormat(
      "(%d visible per row; reasoning tokens NOT included: %s is called through the Responses "
      "API as a reasoning model, which bills its reasoning tokens as output, and their number is "
      "not known before grading; each 100 per row add $%.2f online. Measure them on a pilot run "
      "(run --examples 20): usage.completion_tokens / rows graded in its summary.json, minus %d, "
      "and pass that as --est-reasoning-tokens-per-row)",
      visible, options.grader.model, estimate.cost_per_100_reasoning_tokens_per_row, visible);
}

}  // namespace

std::string FormatDryRunEstimate(const DryRunOptions& options, const DryRunEstimate& estimate) {
  const char* bound = estimate.reasoning_left_out ? "at least " : "";
  return absl::StrFormat(
      "dry-run: wrote %d request rows for %d of %d tasks to %s (%d tasks skipped: no "
      "response)\n"
      "estimated input tokens: %d (UTF-8 bytes of the grader messages / 4, per row)\n"
      "estimated output tokens: %d %s\n"
      "estimated cost: %s$%.2f without prompt caching, %s$%.2f with best-case prompt caching "
      "(%d cached input tokens)\n"
      "estimated cost through the Batch API (run --grader-mode batch, x%g): %s$%.2f without "
      "prompt caching, %s$%.2f with best-case prompt caching\n"
      "prices (USD per million tokens): input %.2f, cached input %.2f, output %.2f",
      estimate.rows, estimate.tasks_with_response, estimate.tasks, options.out,
      estimate.tasks - estimate.tasks_with_response, estimate.input_tokens, estimate.output_tokens,
      OutputTokensBasis(options, estimate), bound, estimate.cost_uncached, bound,
      estimate.cost_best_cached, estimate.cached_input_tokens, options.batch_price_factor, bound,
      estimate.cost_uncached * options.batch_price_factor, bound,
      estimate.cost_best_cached * options.batch_price_factor, options.prices.input_per_mtok,
      options.prices.cached_input_per_mtok, options.prices.output_per_mtok);
}

absl::StatusOr<std::string> RunDryRun(const DryRunOptions& options) {
  HB_ASSIGN_OR_RETURN(DryRunEstimate estimate, DryRun(options));
  return FormatDryRunEstimate(options, estimate);
}

}  // namespace hb
