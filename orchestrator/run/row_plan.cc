#include "orchestrator/run/row_plan.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hb {
namespace {

std::string DefaultName(absl::string_view path) {
  const size_t slash = path.rfind('/');
  absl::string_view name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  absl::ConsumeSuffix(&name, ".gz");
  if (!absl::ConsumeSuffix(&name, ".jsonl")) absl::ConsumeSuffix(&name, ".json");
  return std::string(name);
}

std::string CheckName(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > 100) return "is longer than 100 characters";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return "may only use letters, digits, '.', '_' and '-' (it names a folder under --out)";
    }
  }
  if (name[0] == '.') return "must not start with '.'";
  if (absl::StartsWith(name, "journal.sqlite")) return "is reserved for the journal";
  return "";
}

}  // namespace

absl::StatusOr<std::vector<CheckpointSpec>> ParseCheckpointSpecs(
    const std::vector<std::string>& specs) {
  if (specs.empty()) {
    return absl::InvalidArgumentError(kNoCheckpointsError);
  }
  std::vector<CheckpointSpec> out;
  absl::flat_hash_map<std::string, std::string> seen;  // name -> entry
  for (const std::string& entry : specs) {
    CheckpointSpec spec;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) {
      spec.name = entry.substr(0, eq);
      spec.path = entry.substr(eq + 1);
    } else {
      spec.path = entry;
      spec.name = DefaultName(entry);
    }
    if (spec.path.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses '", entry, "': no file path (use NAME=PATH or PATH)"));
    }
    const std::string problem = CheckName(spec.name);
    if (!problem.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses '", entry, "': checkpoint name '", spec.name, "' ", problem));
    }
    auto [it, inserted] = seen.emplace(spec.name, entry);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("--responses '", entry, "': checkpoint name '",
                                                     spec.name, "' is also used by '", it->second,
                                                     "'; name them apart with NAME=PATH"));
    }
    out.push_back(std::move(spec));
  }
  return out;
}

std::vector<PlannedRow> PlanRows(const std::vector<const Example*>& tasks,
                                 const std::vector<CheckpointRows>& checkpoints,
                                 const absl::flat_hash_set<RowKey>& done) {
  std::vector<PlannedRow> rows;
  RowKey probe;
  for (const CheckpointRows& checkpoint : checkpoints) {
    probe.checkpoint = *checkpoint.name;
    for (const Example* example : tasks) {
      const Response* response = checkpoint.find_response(example->prompt_id);
      if (response == nullptr) continue;
      probe.prompt_id = example->prompt_id;
      for (int i = 0; i < static_cast<int>(example->rubrics.size()); ++i) {
        probe.rubric_index = i;
        if (done.contains(probe)) continue;
        rows.push_back(PlannedRow{checkpoint.name, example, response, i});
      }
    }
  }
  return rows;
}

}  // namespace hb
