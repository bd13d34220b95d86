// `hb-orchestrator tasks`: the environment view of the dataset, one task per line.
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/prompts.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace hb {

using commands_internal::ApplyExamples;
using commands_internal::CheckExamples;
using commands_internal::Require;
using commands_internal::WriteOutput;

absl::StatusOr<std::string> RunTasks(const TasksOptions& options) {
  HB_RETURN_IF_ERROR(Require("dataset", options.dataset));
  HB_RETURN_IF_ERROR(Require("out", options.out));
  HB_RETURN_IF_ERROR(CheckExamples(options.examples));
  HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(options.dataset, {}));
  ApplyExamples(dataset, options.examples);
  std::string out;
  for (const Example& example : dataset.examples) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    auto string = [&](const std::string& value) { WriteJsonString(writer, value); };
    writer.StartObject();
    writer.Key("prompt_id");
    string(example.prompt_id);
    writer.Key("messages");
    writer.StartArray();
    for (const Message& message : example.prompt) {
      writer.StartObject();
      writer.Key("role");
      string(message.role);
      writer.Key("content");
      string(message.content);
      writer.EndObject();
    }
    writer.EndArray();
    writer.Key("prompt_text");
    string(TaskPromptText(example.prompt));
    writer.EndObject();
    absl::StrAppend(&out, absl::string_view(buffer.GetString(), buffer.GetSize()), "\n");
  }
  HB_RETURN_IF_ERROR(WriteOutput(options.out, out));
  return absl::StrCat("tasks: wrote ", dataset.examples.size(), " tasks to ", options.out);
}

}  // namespace hb
