#include "orchestrator/policy/policy_request.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/healthbench/prompts.h"
#include "rapidjson/document.h"

namespace hb {

absl::Status ParsePolicyInput(const std::string& text, PolicyInput* input) {
  if (text == "messages") {
    *input = PolicyInput::kMessages;
  } else if (text == "prompt-text") {
    *input = PolicyInput::kPromptText;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy-input: expected messages or prompt-text, got '", text, "'"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePolicyRequestSettings(const PolicyRequestSettings& settings) {
  if (settings.model.empty()) return absl::InvalidArgumentError("--policy-model is required");
  if (settings.temperature.has_value() &&
      !(*settings.temperature >= 0 && *settings.temperature <= 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy-temperature must be in [0, 2], got ", *settings.temperature));
  }
  if (settings.max_tokens.has_value() && *settings.max_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--policy-max-tokens must be >= 1, got ", *settings.max_tokens));
  }
  if (settings.extra_body.empty()) return absl::OkStatus();
  rapidjson::Document doc;
  if (absl::Status parsed = ParseJsonObjectFlag("--policy-extra-body", settings.extra_body,
                                                "{\"reasoning_effort\":\"low\"}", doc);
      !parsed.ok()) {
    return parsed;
  }
  for (const char* key : {"model", "messages", "temperature", "max_tokens"}) {
    if (doc.HasMember(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--policy-extra-body sets '", key, "', which has its own flag; use that"));
    }
  }
  return absl::OkStatus();
}

std::string BuildPolicyRequestBody(const PolicyRequestSettings& settings,
                                   const std::vector<Message>& prompt) {
  rapidjson::Document extra;
  if (!settings.extra_body.empty()) ParseJson(settings.extra_body, extra).IgnoreError();
  return WriteJson([&](JsonWriter& w) {
    auto message = [&w](absl::string_view role, absl::string_view content) {
      w.StartObject();
      w.Key("role");
      WriteJsonString(w, role);
      w.Key("content");
      WriteJsonString(w, content);
      w.EndObject();
    };
    w.StartObject();
    w.Key("model");
    WriteJsonString(w, settings.model);
    w.Key("messages");
    w.StartArray();
    if (settings.system_prompt.has_value()) message("system", *settings.system_prompt);
    if (settings.input == PolicyInput::kPromptText) {
      message("user", TaskPromptText(prompt));
    } else {
      for (const Message& m : prompt) message(m.role, m.content);
    }
    w.EndArray();
    if (settings.temperature.has_value()) {
      w.Key("temperature");
      WritePythonFloat(w, *settings.temperature);
    }
    if (settings.max_tokens.has_value()) {
      w.Key("max_tokens");
      w.Int64(*settings.max_tokens);
    }
    WriteJsonMembers(w, extra);
    w.EndObject();
  });
}

std::string PolicySettingsFingerprint(const PolicyRequestSettings& settings) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("model");
    WriteJsonString(w, settings.model);
    w.Key("input");
    w.String(settings.input == PolicyInput::kMessages ? "messages" : "prompt-text");
    w.Key("system_prompt");
    WriteOptionalJsonString(w, settings.system_prompt);
    w.Key("temperature");
    if (settings.temperature.has_value()) {
      WritePythonFloat(w, *settings.temperature);
    } else {
      w.Null();
    }
    w.Key("max_tokens");
    if (settings.max_tokens.has_value()) {
      w.Int64(*settings.max_tokens);
    } else {
      w.Null();
    }
    w.Key("extra_body");
    WriteJsonString(w, settings.extra_body);
    w.EndObject();
  });
}

}  // namespace hb
