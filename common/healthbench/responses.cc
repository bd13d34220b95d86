#include "common/healthbench/responses.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "common/healthbench/jsonl_file.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

absl::StatusOr<Response> ParseResponse(absl::string_view line, const std::string& path,
                                       int number) {
  auto error = [&](absl::string_view message) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", number, ": ", message));
  };
  rapidjson::Document doc;
  std::string parse_error = jsonl_internal::ParseLine(line, doc);
  if (!parse_error.empty()) return error(parse_error);
  if (!doc.IsObject()) {
    return error(absl::StrCat("expected a JSON object, got ", JsonTypeName(doc)));
  }
  Response response;
  response.line = number;
  for (auto [name, target] :
       {std::pair<const char*, std::string*>{"prompt_id", &response.prompt_id},
        {"response", &response.response}}) {
    absl::StatusOr<std::string> value = JsonStringMember(doc, name);
    if (!value.ok()) return error(value.status().message());
    *target = *std::move(value);
  }
  // Optional; null is read as absent (a Python writer's None).
  const rapidjson::Value* system = FindJsonMember(doc, "system_prompt");
  if (system != nullptr && !system->IsNull()) {
    absl::StatusOr<std::string> text = JsonString(*system, "system_prompt");
    if (!text.ok()) return error(text.status().message());
    response.system_prompt = *std::move(text);
  }
  return response;
}

// Whether some line of `lines` (those that parse) answers a task of `dataset`.
bool AnswersSomeTask(const std::vector<jsonl_internal::Line>& lines, const std::string& path,
                     const Dataset& dataset) {
  for (const jsonl_internal::Line& line : lines) {
    absl::StatusOr<Response> response = ParseResponse(line.text, path, line.number);
    if (response.ok() && dataset.Find(response->prompt_id) != nullptr) return true;
  }
  return false;
}

// A responses file none of whose responses is for a task of `dataset`: another dataset's
// answers (--ignore-extra-responses would only hide that, and grade nothing).
absl::Status AnswersNoTask(const std::string& path, const Dataset& dataset,
                           const std::string& first_id, int first_line) {
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": no response is for a task of ", dataset.path, " (the first, line ", first_line,
      ", is for prompt_id '", first_id,
      "'): these responses answer another dataset; give the dataset they answer, or the "
      "responses to this one"));
}

absl::Status Duplicate(const std::string& path, int line, const std::string& prompt_id,
                       int first_line) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": duplicate prompt_id '",
                                                 prompt_id, "' (first on line ", first_line, ")"));
}

}  // namespace

const Response* ResponseSet::Find(const std::string& prompt_id) const {
  auto it = index.find(prompt_id);
  return it == index.end() ? nullptr : &responses[it->second];
}

absl::StatusOr<ResponseSet> LoadResponses(const std::string& path, const Dataset& dataset) {
  return LoadResponses(path, dataset, ResponseLoadOptions{});
}

absl::StatusOr<ResponseSet> LoadResponses(const std::string& path, const Dataset& dataset,
                                          const ResponseLoadOptions& options) {
  HB_ASSIGN_OR_RETURN(jsonl_internal::FileContents contents, jsonl_internal::ReadWithSha256(path));
  ResponseSet set;
  absl::flat_hash_map<std::string, int> extra_lines;  // ignored prompt_id -> line
  set.path = path;
  set.sha256 = std::move(contents.sha256);
  const std::vector<jsonl_internal::Line> lines = jsonl_internal::SplitLines(contents.text);
  std::string first_id;  // of the first response, for AnswersNoTask
  int first_line = 0;
  for (const jsonl_internal::Line& line : lines) {
    HB_ASSIGN_OR_RETURN(Response response, ParseResponse(line.text, path, line.number));
    if (first_line == 0) {
      first_id = response.prompt_id;
      first_line = line.number;
    }
    const bool extra = dataset.Find(response.prompt_id) == nullptr;
    if (extra && !options.ignore_extra) {
      if (set.responses.empty() && !AnswersSomeTask(lines, path, dataset)) {
        return AnswersNoTask(path, dataset, first_id, first_line);
      }
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line.number, ": unknown prompt_id '", response.prompt_id,
                       "' (not in ", dataset.path,
                       "; to grade a subset with the responses to the whole set, pass "
                       "--ignore-extra-responses)"));
    }
    if (extra) {
      // Extra responses are still checked for duplicates: the file must be a valid responses
      // file of the whole set.
      auto [it, inserted] = extra_lines.emplace(response.prompt_id, line.number);
      if (!inserted) return Duplicate(path, line.number, response.prompt_id, it->second);
      ++set.ignored_extra;
      continue;
    }
    auto [it, inserted] = set.index.emplace(response.prompt_id, set.responses.size());
    if (!inserted) {
      return Duplicate(path, line.number, response.prompt_id, set.responses[it->second].line);
    }
    set.responses.push_back(std::move(response));
  }
  if (set.responses.empty() && set.ignored_extra > 0) {
    return AnswersNoTask(path, dataset, first_id, first_line);
  }
  return set;
}

}  // namespace hb
