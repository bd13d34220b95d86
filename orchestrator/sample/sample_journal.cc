#include "orchestrator/sample/sample_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "rapidjson/document.h"

namespace hb {
namespace {

constexpr char kJournalFormat[] = "hb-sample/1";

std::string FormatHeader(const SampleJournalHeader& header) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("journal");
    w.String(kJournalFormat);
    w.Key("dataset_sha256");
    WriteJsonString(w, header.dataset_sha256);
    w.Key("examples");
    w.Int64(header.examples);
    w.Key("shard");
    WriteJsonString(w, header.shard);
    w.Key("settings");
    WriteRawJson(w, header.settings, rapidjson::kObjectType);
    w.EndObject();
  });
}

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

absl::Status WriteAllAndSync(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot write the sample journal", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::fdatasync(fd) != 0) return ErrnoError("cannot sync the sample journal", path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SampleJournal>> SampleJournal::Open(
    const std::string& path, const SampleJournalHeader& header) {
  std::string text;
  if (access(path.c_str(), F_OK) == 0) {
    HB_ASSIGN_OR_RETURN(text, ReadFile(path));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open the sample journal ", path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<SampleJournal> journal(new SampleJournal(path, fd));
  // Keep whole lines only: a torn last line (no newline) is a write the crash interrupted.
  const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  text.resize(keep);
  if (::ftruncate(fd, static_cast<off_t>(keep)) != 0 ||
      ::lseek(fd, 0, SEEK_END) == static_cast<off_t>(-1)) {
    return ErrnoError("cannot truncate the sample journal", path);
  }
  if (text.empty()) {
    text = absl::StrCat(FormatHeader(header), "\n");
    HB_RETURN_IF_ERROR(WriteAllAndSync(fd, text, path));
  } else {
    HB_RETURN_IF_ERROR(journal->Replay(header, text));
  }
  {
    absl::MutexLock lock(&journal->mu_);
    journal->synced_bytes_ = text.size();
  }
  journal->writer_ = std::thread([raw = journal.get()] { raw->WriterLoop(); });
  return journal;
}

absl::Status SampleJournal::Replay(const SampleJournalHeader& header, const std::string& text) {
  const size_t header_end = text.find('\n');
  const std::string expected = FormatHeader(header);
  const std::string found = text.substr(0, header_end);
  if (found != expected) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_,
                     " was written by another sampling job (dataset, --examples, shard or policy "
                     "settings differ: it has ",
                     found, ", this run is ", expected,
                     "); use another --out, or delete the journal to sample again from scratch"));
  }
  HB_ASSIGN_OR_RETURN(replayed_, ParseReplies(text));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampledReply>> SampleJournal::ParseReplies(
    absl::string_view text) const {
  std::vector<SampledReply> replies;
  absl::flat_hash_set<std::string> seen;
  int line_number = 1;
  const size_t header_end = text.find('\n');
  size_t start = header_end == absl::string_view::npos ? text.size() : header_end + 1;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    ++line_number;
    absl::StatusOr<SampledReply> reply =
        ParseSampledReply(std::string(text.substr(start, end - start)));
    if (!reply.ok()) {
      return absl::DataLossError(absl::StrCat(
          path_, ":", line_number, ": corrupt journal line: ", reply.status().message(),
          "; move the journal aside to sample again from scratch"));
    }
    if (seen.insert(reply->prompt_id).second) replies.push_back(*std::move(reply));
    start = end + 1;
  }
  return replies;
}

SampleJournal::~SampleJournal() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (writer_.joinable()) writer_.join();
  ::close(fd_);
}

void SampleJournal::AppendReply(ReplyRecord reply, CommitCallback on_commit) {
  absl::MutexLock lock(&mu_);
  pending_.emplace_back(std::move(reply), std::move(on_commit));
}

absl::StatusOr<std::vector<ReplyRecord>> SampleJournal::Replies(const std::string&) {
  size_t synced;
  {
    absl::MutexLock lock(&mu_);
    synced = synced_bytes_;
  }
  // The writer only appends past `synced`: the prefix read here is whole, synced lines.
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path_));
  text.resize(std::min(text.size(), synced));
  HB_ASSIGN_OR_RETURN(std::vector<SampledReply> replies, ParseReplies(text));
  std::sort(replies.begin(), replies.end(),
            [](const SampledReply& a, const SampledReply& b) { return a.prompt_id < b.prompt_id; });
  std::vector<ReplyRecord> out;
  out.reserve(replies.size());
  for (const SampledReply& reply : replies) {
    out.push_back(ReplyRecord{"", reply.prompt_id, FormatSampledReply(reply), absl::UnixEpoch()});
  }
  return out;
}

bool SampleJournal::HasWorkLocked() const { return closing_ || !pending_.empty(); }

void SampleJournal::WriterLoop() {
  while (true) {
    std::vector<std::pair<ReplyRecord, CommitCallback>> batch;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &SampleJournal::HasWorkLocked));
      if (pending_.empty()) return;  // closing, and everything written
      batch.swap(pending_);
      status = error_;
    }
    std::string data;
    for (const auto& [record, callback] : batch) absl::StrAppend(&data, record.reply, "\n");
    if (status.ok()) status = WriteAllAndSync(fd_, data, path_);
    {
      absl::MutexLock lock(&mu_);
      if (error_.ok()) error_ = status;
      if (status.ok()) synced_bytes_ += data.size();
    }
    for (auto& [record, callback] : batch) {
      if (callback) callback(status);
    }
  }
}

}  // namespace hb
