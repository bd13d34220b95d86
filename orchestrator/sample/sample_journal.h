// SampleJournal: the durable record of `hb-orchestrator sample` — the policy replies received so
// far — so that a sampling job killed at any point (SIGKILL included) and run again with the same
// command asks the policy only for the tasks it had not durably received.
//
// Format: an append-only JSONL file. The first line is a header
//   {"journal":"hb-sample/1","dataset_sha256":...,"examples":N,"shard":"i/n","settings":{...}}
// and every further line is one SampledReply in the responses format (FormatSampledReply). An
// append-only file rather than SQLite (orchestrator/run/sqlite_verdict_store.h) because a
// sampled task is written once and never updated, the records are exactly the output lines (a
// reader can inspect or salvage them with any JSONL tool), and a whole batch costs one write()
// and one fdatasync(). Crash safety: lines are appended in batches, each batch followed by
// fdatasync before its replies count as done; a torn last line (a crash mid-write) has no
// trailing newline and is dropped (and truncated away) on open. The journal is refused when its
// header differs from this run's (other dataset, --examples or policy settings): it belongs to a
// different job.
//
// Not thread-safe: one thread (the sampling job's main thread) opens and appends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "llm/llm_client.h"

namespace hb {

// One task's policy reply, as written to the responses file.
struct SampledReply {
  std::string prompt_id;
  std::string response;
  std::optional<std::string> system_prompt;
  std::string model;
  std::string finish_reason;
  ChatUsage usage;
};

// One compact JSON line, no newline: {"prompt_id","response","system_prompt" (when set),
// "model","finish_reason","usage":{"prompt_tokens","completion_tokens","total_tokens",
// "cached_tokens"}}. LoadResponses reads it (it ignores the extra fields).
std::string FormatSampledReply(const SampledReply& reply);

// Parses a FormatSampledReply line; kInvalidArgument naming the field otherwise.
absl::StatusOr<SampledReply> ParseSampledReply(const std::string& line);

// What a journal belongs to.
struct SampleJournalHeader {
  std::string dataset_sha256;
  int64_t examples = -1;
  std::string settings;       // PolicySettingsFingerprint, a JSON object
  std::string shard = "0/1";  // "<index>/<count>"
};

class SampleJournal {
 public:
  // Opens `path`, creating it (and its header) when absent; with an existing file, checks its
  // header against `header` and reads its replies (replies()). Errors: kFailedPrecondition "…
  // was written by another sampling job (<which field differs>); use another --out or delete
  // it" on a header mismatch; kDataLoss "<path>:<line>: …" for a corrupt line other than a
  // torn last one; kPermissionDenied / kInternal from the file system.
  static absl::StatusOr<SampleJournal> Open(const std::string& path,
                                            const SampleJournalHeader& header);
  SampleJournal(SampleJournal&& other) noexcept;
  SampleJournal& operator=(SampleJournal&&) = delete;
  ~SampleJournal();

  // The replies found on open, in file order (one per prompt_id: the first wins).
  const std::vector<SampledReply>& replies() const { return replies_; }

  // Appends `replies` with one write and one fdatasync. kInternal on an I/O error.
  absl::Status Append(const std::vector<SampledReply>& replies);

 private:
  SampleJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  absl::Status Replay(const SampleJournalHeader& header, const std::string& text);

  std::string path_;
  int fd_ = -1;
  std::vector<SampledReply> replies_;
};

}  // namespace hb
