// `hb-orchestrator merge`: one report per checkpoint from the outputs of sharded runs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "orchestrator/commands/command_inputs.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/commands/summary_file.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/run/output_lock.h"
#include "orchestrator/run/row_plan.h"

namespace hb {
namespace {

using commands_internal::CheckpointSummary;

// In a --when-complete merge's out: the sha256 of the shard outputs it merged.
constexpr char kMergedFromFile[] = "merged-from.sha256";

// One checkpoint's summary in one shard.
struct ShardProvenance {
  std::string shard_dir;
  CheckpointSummary summary;
};

struct MergedCheckpoint {
  std::string name;  // folder name
  std::vector<ShardProvenance> shards;
};

// True when every shard graded a responses file of its own, RUN_DIR/<checkpoint>/
// responses.jsonl, as `run --policy` samples per shard.
bool SampledPerShard(const MergedCheckpoint& merged) {
  std::error_code error;
  for (const ShardProvenance& shard : merged.shards) {
    if (!std::filesystem::equivalent(shard.summary.responses_path,
                                     shard.summary.dir + "/responses.jsonl", error)) {
      return false;
    }
  }
  return true;
}

// The shards' own responses files joined into OUT/<checkpoint>/responses.jsonl (each checked
// against the sha256 its shard recorded), loaded against `dataset`.
absl::StatusOr<ResponseSet> JoinShardResponses(const MergedCheckpoint& merged,
                                               const Dataset& dataset,
                                               const MergeOptions& options) {
  std::string joined;
  for (const ShardProvenance& shard : merged.shards) {
    const std::string& path = shard.summary.responses_path;
    HB_ASSIGN_OR_RETURN(ResponseSet part, LoadResponses(path, dataset, {/*ignore_extra=*/true}));
    if (part.sha256 != shard.summary.responses_sha256) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", merged.name, "': responses '", path, "' have sha256 ", part.sha256,
          " but shard '", shard.shard_dir, "' graded ", shard.summary.responses_sha256));
    }
    HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
    if (!text.empty() && text.back() != '\n') text += '\n';
    joined += text;
  }
  const std::string path = options.out + "/" + merged.name + "/responses.jsonl";
  HB_RETURN_IF_ERROR(MakeDirs(options.out + "/" + merged.name));
  HB_RETURN_IF_ERROR(WriteFileAtomically(path, joined));
  return LoadResponses(path, dataset, {/*ignore_extra=*/true});
}

// Why the shards given do not cover `merged`'s tasks: shard folders without this checkpoint,
// and, when every shard recorded its index (provenance.shard), the indices not given. Empty
// when they cover every task. kInvalidArgument for two folders of one shard index or shards
// of different counts.
absl::StatusOr<std::vector<std::string>> CoverageGaps(const MergedCheckpoint& merged,
                                                      const MergeOptions& options) {
  std::vector<std::string> gaps;
  std::set<std::string> present;
  for (const ShardProvenance& shard : merged.shards) present.insert(shard.shard_dir);
  for (const std::string& dir : options.shard_dirs) {
    if (present.count(dir) == 0) {
      gaps.push_back(absl::StrCat("shard '", dir, "' has no ", merged.name,
                                  "/summary.json (did that shard stop before its reports?)"));
    }
  }
  const CheckpointSummary& first = merged.shards.front().summary;
  std::map<int, std::string> by_index;
  for (const ShardProvenance& shard : merged.shards) {
    const CheckpointSummary& s = shard.summary;
    if (s.shard_count <= 0) return gaps;  // not recorded (older runs, `score`)
    if (s.shard_count != first.shard_count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", merged.name, "': shard '", shard.shard_dir, "' is one of ", s.shard_count,
          " shards but shard '", merged.shards.front().shard_dir, "' one of ", first.shard_count));
    }
    auto [it, inserted] = by_index.emplace(s.shard_index, shard.shard_dir);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint '", merged.name, "': shards '", it->second, "' and '",
                       shard.shard_dir, "' are both shard ", s.shard_index, " of ", s.shard_count));
    }
  }
  std::vector<int> missing;
  for (int i = 0; i < first.shard_count; ++i) {
    if (by_index.count(i) == 0) missing.push_back(i);
  }
  if (!missing.empty()) {
    gaps.push_back(absl::StrCat("shard index ", absl::StrJoin(missing, ", "), " of ",
                                first.shard_count, " not given"));
  }
  return gaps;
}

// Keeps the tasks the shards of `merged` own (a partial merge): by their recorded shard
// index, or, for shards that recorded none, the tasks of their tasks.jsonl.
absl::Status KeepShardTasks(const MergedCheckpoint& merged, Dataset& dataset) {
  absl::flat_hash_set<std::string> ids;
  for (const ShardProvenance& shard : merged.shards) {
    const CheckpointSummary& s = shard.summary;
    if (s.shard_count > 0) {
      HB_ASSIGN_OR_RETURN(
          std::vector<size_t> positions,
          ShardTaskPositions(dataset.examples.size(), s.shard_index, s.shard_count));
      for (size_t p : positions) ids.insert(dataset.examples[p].prompt_id);
      continue;
    }
    HB_ASSIGN_OR_RETURN(commands_internal::TaskScores tasks,
                        commands_internal::ReadTaskScores(s.dir));
    ids.insert(tasks.prompt_ids.begin(), tasks.prompt_ids.end());
  }
  KeepExamples(dataset, [&](const Example& e) { return ids.contains(e.prompt_id); });
  return absl::OkStatus();
}

// kInvalidArgument naming the first shard of `merged` that disagrees with the first one on what
// was graded how (commands_internal::ShardDisagreement; the responses too unless `per_shard`).
absl::Status CheckShardsAgree(const MergedCheckpoint& merged, bool per_shard) {
  const CheckpointSummary& first = merged.shards.front().summary;
  for (const ShardProvenance& shard : merged.shards) {
    std::string disagreement =
        commands_internal::ShardDisagreement(first, shard.summary, !per_shard);
    if (!disagreement.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", merged.name, "': shard '", shard.shard_dir, "' disagrees with shard '",
          merged.shards.front().shard_dir, "' on ", disagreement));
    }
  }
  return absl::OkStatus();
}

// The dataset and responses a merged checkpoint is reported on, from their recorded paths or
// the overrides, each pinned by the sha256 the shards recorded.
struct MergedInputs {
  std::string dataset_path;
  Dataset dataset;
  std::string responses_path;
  ResponseSet responses;
};

absl::StatusOr<MergedInputs> LoadMergedInputs(const MergedCheckpoint& merged,
                                              const MergeOptions& options, bool per_shard) {
  const CheckpointSummary& first = merged.shards.front().summary;
  MergedInputs in;
  in.dataset_path = options.dataset.empty() ? first.dataset_path : options.dataset;
  HB_ASSIGN_OR_RETURN(in.dataset, LoadDataset(in.dataset_path, {}));
  if (in.dataset.sha256 != first.dataset_sha256) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint '", merged.name, "': dataset '", in.dataset_path, "' has sha256 ",
                     in.dataset.sha256, " but the shards graded ", first.dataset_sha256));
  }
  auto override_it = options.responses.find(merged.name);
  in.responses_path = override_it != options.responses.end() ? override_it->second
                      : per_shard ? options.out + "/" + merged.name + "/responses.jsonl"
                                  : first.responses_path;
  // The file is pinned by its sha256 below, so responses outside the dataset (a subset run)
  // were accepted when it was graded.
  if (per_shard) {
    HB_ASSIGN_OR_RETURN(in.responses, JoinShardResponses(merged, in.dataset, options));
    return in;
  }
  HB_ASSIGN_OR_RETURN(in.responses,
                      LoadResponses(in.responses_path, in.dataset, {/*ignore_extra=*/true}));
  if (in.responses.sha256 != first.responses_sha256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint '", merged.name, "': responses '", in.responses_path, "' have sha256 ",
        in.responses.sha256, " but the shards graded ", first.responses_sha256));
  }
  return in;
}

// Tasks a shard left out as unscorable (run --skip-unscorable-tasks) stay out of `dataset`;
// returned to be listed.
std::vector<UnscorableTask> RemoveUnscorable(const MergedCheckpoint& merged, Dataset& dataset) {
  std::vector<UnscorableTask> unscorable;
  absl::flat_hash_set<std::string> unscorable_ids;
  for (const ShardProvenance& shard : merged.shards) {
    for (const UnscorableTask& task : shard.summary.unscorable_tasks) {
      if (unscorable_ids.insert(task.prompt_id).second) unscorable.push_back(task);
    }
  }
  RemoveTasks(dataset, unscorable);
  return unscorable;
}

// What the shards of a checkpoint graded: their verdicts and failures, endpoints and whether
// their verdicts were simulated.
struct ShardRows {
  std::vector<VerdictRow> verdicts;
  std::vector<RowFailure> failures;
  std::set<std::string> endpoints;
  bool simulated = false;
  std::string simulated_reason;
};

absl::StatusOr<ShardRows> ReadShardRows(const MergedCheckpoint& merged, const Dataset& dataset) {
  ShardRows rows;
  for (const ShardProvenance& shard : merged.shards) {
    const std::string verdicts_path = shard.summary.dir + "/verdicts.jsonl";
    HB_ASSIGN_OR_RETURN(VerdictFile file, ReadVerdictFile(verdicts_path, dataset));
    HB_RETURN_IF_ERROR(CheckVerdictsHeader(verdicts_path, file.header, shard.summary.responses_path,
                                           shard.summary.responses_sha256, dataset.sha256));
    if (!file.header.has_value()) {
      std::fprintf(stderr, "hb-orchestrator merge: %s\n",
                   MissingVerdictsHeaderWarning(verdicts_path).c_str());
    }
    std::move(file.rows.begin(), file.rows.end(), std::back_inserter(rows.verdicts));
    std::error_code error;
    const std::string failures_path = shard.summary.dir + "/failures.jsonl";
    if (std::filesystem::exists(failures_path, error)) {
      HB_ASSIGN_OR_RETURN(std::vector<RowFailure> failed, LoadFailures(failures_path, dataset));
      std::move(failed.begin(), failed.end(), std::back_inserter(rows.failures));
    }
    rows.endpoints.insert(shard.summary.grader_endpoint);
    rows.simulated = rows.simulated || shard.summary.simulated;
    if (rows.simulated_reason.empty()) rows.simulated_reason = shard.summary.simulated_reason;
  }
  return rows;
}

// The merged report's provenance: the first shard's (the shards agree), with the merged
// inputs, every shard's folder and endpoint.
ReportContext MergedContext(const MergedCheckpoint& merged, const MergedInputs& in,
                            const ShardRows& rows, std::vector<UnscorableTask> unscorable,
                            const std::vector<std::string>& gaps, const MergeOptions& options) {
  const CheckpointSummary& first = merged.shards.front().summary;
  ReportContext context;
  context.checkpoint = first.checkpoint;
  context.dataset_path = in.dataset_path;
  context.dataset_sha256 = first.dataset_sha256;
  context.responses_path = in.responses_path;
  context.responses_sha256 = in.responses.sha256;
  context.subset = first.subset;
  context.responses_ignored_extra = in.responses.ignored_extra;
  context.unscorable_tasks = std::move(unscorable);
  context.template_sha256 = first.template_sha256;
  context.grader = first.grader;
  // The shards agree on it (ShardDisagreement): the merged tasks get the same adjusted scores.
  context.length_adjustment = first.length_adjustment;
  context.seed = first.seed;
  context.simulated = rows.simulated;
  context.simulated_reason = rows.simulated_reason;
  // Missing rows mark the merged report incomplete by themselves (WriteCheckpointReport);
  // missing shards too, unless accepted (then `dataset` holds only the given shards' tasks).
  context.incomplete = !gaps.empty() && !options.allow_partial_shards;
  for (const ShardProvenance& shard : merged.shards) context.shards.push_back(shard.shard_dir);
  context.grader_upstream = first.grader_upstream;
  context.grader_version = first.grader_version;
  context.grader_replicas = first.grader_replicas;
  context.grader_endpoint = absl::StrJoin(rows.endpoints, ",");
  context.examples = first.examples;
  context.checkpoint_index = first.checkpoint_index;
  return context;
}

absl::StatusOr<CheckpointResult> MergeOne(const MergedCheckpoint& merged,
                                          const std::vector<std::string>& gaps,
                                          const MergeOptions& options) {
  const CheckpointSummary& first = merged.shards.front().summary;
  const bool per_shard =
      options.responses.find(merged.name) == options.responses.end() && SampledPerShard(merged);
  HB_RETURN_IF_ERROR(CheckShardsAgree(merged, per_shard));
  HB_ASSIGN_OR_RETURN(MergedInputs in, LoadMergedInputs(merged, options, per_shard));
  commands_internal::ApplyExamples(in.dataset, first.examples);
  if (!gaps.empty() && options.allow_partial_shards) {
    HB_RETURN_IF_ERROR(KeepShardTasks(merged, in.dataset));
  }
  std::vector<UnscorableTask> unscorable = RemoveUnscorable(merged, in.dataset);
  HB_ASSIGN_OR_RETURN(ShardRows rows, ReadShardRows(merged, in.dataset));
  const ReportContext context =
      MergedContext(merged, in, rows, std::move(unscorable), gaps, options);
  absl::StatusOr<CheckpointResult> result =
      WriteCheckpointReport(in.dataset, in.responses, rows.verdicts, rows.failures, context,
                            options.out + "/" + merged.name);
  if (!result.ok()) {
    return absl::Status(result.status().code(), absl::StrCat("checkpoint '", merged.name,
                                                             "': ", result.status().message()));
  }
  return result;
}

// The shard folders that do not hold a complete run yet, each with why: no checkpoint report
// yet, one without a checkpoint another shard has, or a report marked incomplete (interrupted,
// rows failed or missing). Empty when every shard is complete.
std::vector<std::string> IncompleteShards(const MergeOptions& options) {
  std::map<std::string, std::vector<std::string>> names;
  std::set<std::string> all;
  for (const std::string& dir : options.shard_dirs) {
    absl::StatusOr<std::vector<std::string>> listed =
        commands_internal::ListCheckpointFolders(dir, "shard");
    if (listed.ok()) names[dir] = *listed;
    all.insert(names[dir].begin(), names[dir].end());
  }
  std::vector<std::string> incomplete;
  for (const std::string& dir : options.shard_dirs) {
    std::vector<std::string> why;
    for (const std::string& name : all) {
      if (std::find(names[dir].begin(), names[dir].end(), name) == names[dir].end()) {
        why.push_back(absl::StrCat("no ", name, "/summary.json yet"));
        continue;
      }
      absl::StatusOr<CheckpointSummary> summary =
          commands_internal::ReadCheckpointSummary(dir + "/" + name);
      if (!summary.ok()) {
        why.push_back(std::string(summary.status().message()));
      } else if (summary->incomplete) {
        why.push_back(absl::StrCat(name, " is marked incomplete"));
      }
    }
    if (all.empty()) why.push_back("no <checkpoint>/summary.json yet");
    if (!why.empty()) incomplete.push_back(absl::StrCat(dir, " (", absl::StrJoin(why, "; "), ")"));
  }
  return incomplete;
}

// sha256 over what a merge reads from the shards (each checkpoint's summary, verdicts and
// failures files, by path) and the options that change its output.
absl::StatusOr<std::string> MergeInputsSha256(const MergeOptions& options) {
  Sha256 hash;
  auto add = [&hash](absl::string_view text) {
    hash.Update(absl::StrCat(text.size(), ":"));
    hash.Update(text);
  };
  add(options.dataset);
  for (const auto& [name, path] : options.responses) add(absl::StrCat(name, "=", path));
  add(options.allow_partial_shards ? "partial" : "whole");
  for (const std::string& dir : options.shard_dirs) {
    HB_ASSIGN_OR_RETURN(std::vector<std::string> names,
                        commands_internal::ListCheckpointFolders(dir, "shard"));
    for (const std::string& name : names) {
      for (const char* file : {"summary.json", "verdicts.jsonl", "failures.jsonl"}) {
        const std::string path = absl::StrCat(dir, "/", name, "/", file);
        std::error_code error;
        if (!std::filesystem::exists(path, error)) continue;
        HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
        add(path);
        add(text);
      }
    }
  }
  return hash.FinishHex();
}

absl::StatusOr<MergeResult> MergeNow(const MergeOptions& options);

// `merge --when-complete` (MergeOptions::when_complete).
absl::StatusOr<MergeResult> MergeWhenComplete(const MergeOptions& options) {
  MergeResult out;
  const std::vector<std::string> incomplete = IncompleteShards(options);
  if (!incomplete.empty()) {
    out.message = absl::StrCat(
        "merge: not merging yet: ", incomplete.size(), " of ", options.shard_dirs.size(),
        " shard folders hold no complete run: ", absl::StrJoin(incomplete, ", "),
        ". The last shard to complete merges (--when-complete)");
    return out;
  }
  HB_RETURN_IF_ERROR(MakeDirs(options.out));
  HB_ASSIGN_OR_RETURN(std::unique_ptr<OutputLock> lock,
                      OutputLock::Acquire(options.out, /*wait=*/true));
  HB_ASSIGN_OR_RETURN(const std::string inputs, MergeInputsSha256(options));
  const std::string record = options.out + "/" + kMergedFromFile;
  absl::StatusOr<std::string> previous = ReadFile(record);
  if (previous.ok() && absl::StripTrailingAsciiWhitespace(*previous) == inputs) {
    out.message = absl::StrCat("merge: ", options.out, " already holds the merge of these ",
                               options.shard_dirs.size(), " shards (", record, "); nothing to do");
    return out;
  }
  HB_ASSIGN_OR_RETURN(out, MergeNow(options));
  HB_RETURN_IF_ERROR(WriteFileAtomically(record, inputs + "\n"));
  return out;
}

absl::StatusOr<MergeResult> MergeNow(const MergeOptions& options) {
  std::map<std::string, MergedCheckpoint> by_name;
  for (const std::string& shard_dir : options.shard_dirs) {
    HB_ASSIGN_OR_RETURN(std::vector<std::string> names,
                        commands_internal::ListCheckpointFolders(shard_dir, "shard"));
    for (const std::string& name : names) {
      HB_ASSIGN_OR_RETURN(CheckpointSummary summary,
                          commands_internal::ReadCheckpointSummary(shard_dir + "/" + name));
      MergedCheckpoint& merged = by_name[name];
      merged.name = name;
      merged.shards.push_back(ShardProvenance{shard_dir, std::move(summary)});
    }
  }
  for (const auto& [name, path] : options.responses) {
    if (by_name.find(name) == by_name.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--responses names checkpoint '", name, "', which no shard has"));
    }
  }
  std::vector<const MergedCheckpoint*> order;
  for (const auto& [name, merged] : by_name) order.push_back(&merged);
  std::stable_sort(order.begin(), order.end(),
                   [](const MergedCheckpoint* a, const MergedCheckpoint* b) {
                     return a->shards.front().summary.checkpoint_index <
                            b->shards.front().summary.checkpoint_index;
                   });
  std::vector<CheckpointResult> results;
  MergeResult out;
  std::string& message = out.message;
  for (const MergedCheckpoint* merged : order) {
    HB_ASSIGN_OR_RETURN(std::vector<std::string> gaps, CoverageGaps(*merged, options));
    HB_ASSIGN_OR_RETURN(CheckpointResult result, MergeOne(*merged, gaps, options));
    absl::StrAppend(&message, message.empty() ? "" : "\n", "merge: ", merged->name, ": ",
                    merged->shards.size(), " shards, ", result.graded, " of ", result.tasks,
                    " tasks graded, ", result.graded_rows, " of ", result.rows, " rows graded, ",
                    result.failed_rows, " failed; score ", HeadlineOf(result).Text());
    for (const std::string& gap : gaps) {
      absl::StrAppend(&message, "\nmerge: ", merged->name, ": ", gap,
                      options.allow_partial_shards
                          ? " (accepted: --allow-partial-shards; the report covers the given "
                            "shards' tasks only)"
                          : "; the report is marked INCOMPLETE. Give every shard's folder, or "
                            "pass --allow-partial-shards to report on the given shards only");
    }
    out.incomplete = out.incomplete || result.incomplete;
    results.push_back(std::move(result));
  }
  if (results.size() >= 2) {
    HB_RETURN_IF_ERROR(
        WriteComparison(results, order.front()->shards.front().summary.seed, options.out));
    absl::StrAppend(&message, "\nmerge: wrote ", options.out, "/comparison.json");
  }
  absl::StrAppend(&message, "\nmerge: reports in ", options.out);
  return out;
}

}  // namespace

absl::StatusOr<MergeResult> RunMerge(const MergeOptions& options) {
  HB_RETURN_IF_ERROR(commands_internal::Require("out", options.out));
  if (options.shard_dirs.empty()) {
    return absl::InvalidArgumentError("merge needs at least one SHARD_DIR");
  }
  return options.when_complete ? MergeWhenComplete(options) : MergeNow(options);
}

}  // namespace hb
