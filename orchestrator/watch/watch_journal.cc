#include "orchestrator/watch/watch_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"

namespace hb {

std::string FormatWatchRecord(const WatchRecord& record) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("event");
    WriteJsonString(w, record.event);
    w.Key("checkpoint");
    WriteJsonString(w, record.checkpoint);
    w.Key("version");
    w.Int(record.version);
    w.Key("responses_sha256");
    WriteJsonString(w, record.responses_sha256);
    w.Key("dataset_sha256");
    WriteJsonString(w, record.dataset_sha256);
    w.Key("grader");
    WriteJsonString(w, record.grader);
    w.Key("run_dir");
    WriteJsonString(w, record.run_dir);
    if (record.event != "started") {
      w.Key("exit_code");
      w.Int(record.exit_code);
      w.Key("score");
      WritePythonFloat(w, record.score);
      w.Key("cost_usd");
      WritePythonFloat(w, record.cost_usd);
    }
    if (!record.retry_at.empty()) {
      w.Key("retry_at");
      WriteJsonString(w, record.retry_at);
    }
    w.EndObject();
  });
}

absl::StatusOr<WatchRecord> ParseWatchRecord(const std::string& line) {
  rapidjson::Document doc;
  HB_RETURN_IF_ERROR(ParseJson(line, doc));
  if (!doc.IsObject()) return absl::InvalidArgumentError("not a JSON object");
  WatchRecord r;
  HB_ASSIGN_OR_RETURN(r.event, JsonStringMember(doc, "event"));
  if (r.event != "started" && r.event != "graded" && r.event != "failed") {
    return absl::InvalidArgumentError(absl::StrCat("event: unknown '", r.event, "'"));
  }
  HB_ASSIGN_OR_RETURN(r.checkpoint, JsonStringMember(doc, "checkpoint"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* version, RequireJsonMember(doc, "version"));
  HB_ASSIGN_OR_RETURN(const int64_t v, JsonInt(*version, "version"));
  r.version = static_cast<int>(v);
  HB_ASSIGN_OR_RETURN(r.responses_sha256, JsonStringMember(doc, "responses_sha256"));
  HB_ASSIGN_OR_RETURN(r.dataset_sha256, JsonStringMember(doc, "dataset_sha256"));
  HB_ASSIGN_OR_RETURN(r.grader, JsonStringMember(doc, "grader"));
  HB_ASSIGN_OR_RETURN(r.run_dir, JsonStringMember(doc, "run_dir"));
  if (const rapidjson::Value* code = FindJsonMember(doc, "exit_code"); code != nullptr) {
    HB_ASSIGN_OR_RETURN(const int64_t c, JsonInt(*code, "exit_code"));
    r.exit_code = static_cast<int>(c);
  }
  if (const rapidjson::Value* score = FindJsonMember(doc, "score");
      score != nullptr && !score->IsNull()) {
    HB_ASSIGN_OR_RETURN(r.score, JsonDouble(*score, "score"));
  }
  if (const rapidjson::Value* cost = FindJsonMember(doc, "cost_usd");
      cost != nullptr && !cost->IsNull()) {
    HB_ASSIGN_OR_RETURN(r.cost_usd, JsonDouble(*cost, "cost_usd"));
  }
  if (FindJsonMember(doc, "retry_at") != nullptr) {
    HB_ASSIGN_OR_RETURN(r.retry_at, JsonStringMember(doc, "retry_at"));
  }
  return r;
}

absl::StatusOr<std::unique_ptr<WatchJournal>> WatchJournal::Open(const std::string& path) {
  std::string text;
  if (absl::StatusOr<std::string> read = ReadFile(path); read.ok()) {
    text = *std::move(read);
  } else if (read.status().code() != absl::StatusCode::kNotFound) {
    return read.status();
  }
  std::vector<WatchRecord> records;
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    absl::StatusOr<WatchRecord> record = ParseWatchRecord(lines[i]);
    // The last line without its newline was cut by a kill mid-append: never acted on.
    const bool torn_tail = i + 1 == lines.size();
    if (!record.ok() && torn_tail) break;
    if (!record.ok()) {
      return absl::DataLossError(absl::StrCat(path, ":", i + 1, ": ", record.status().message(),
                                              " (the watch journal; move it aside to start over)"));
    }
    records.push_back(*std::move(record));
  }
  if (!text.empty() && text.back() != '\n') {
    // Drop the torn tail so the next record starts on a line of its own.
    const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) {
      return absl::InternalError(absl::StrCat(path, ": truncate: ", std::strerror(errno)));
    }
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  std::unique_ptr<WatchJournal> journal(new WatchJournal(path, fd));
  journal->records_ = std::move(records);
  return journal;
}

WatchJournal::~WatchJournal() { ::close(fd_); }

absl::Status WatchJournal::Append(const WatchRecord& record) {
  const std::string line = FormatWatchRecord(record) + "\n";
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(absl::StrCat(path_, ": write: ", std::strerror(errno)));
    written += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    return absl::InternalError(absl::StrCat(path_, ": fdatasync: ", std::strerror(errno)));
  }
  records_.push_back(record);
  return absl::OkStatus();
}

}  // namespace hb
