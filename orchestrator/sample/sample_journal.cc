#include "orchestrator/sample/sample_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
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

std::string FormatSampledReply(const SampledReply& reply) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("prompt_id");
    WriteJsonString(w, reply.prompt_id);
    w.Key("response");
    WriteJsonString(w, reply.response);
    if (reply.system_prompt.has_value()) {
      w.Key("system_prompt");
      WriteJsonString(w, *reply.system_prompt);
    }
    w.Key("model");
    WriteJsonString(w, reply.model);
    w.Key("finish_reason");
    WriteJsonString(w, reply.finish_reason);
    w.Key("usage");
    w.StartObject();
    w.Key("prompt_tokens");
    w.Int64(reply.usage.prompt_tokens);
    w.Key("completion_tokens");
    w.Int64(reply.usage.completion_tokens);
    w.Key("total_tokens");
    w.Int64(reply.usage.prompt_tokens + reply.usage.completion_tokens);
    w.Key("cached_tokens");
    w.Int64(reply.usage.cached_tokens);
    w.EndObject();
    w.EndObject();
  });
}

absl::StatusOr<SampledReply> ParseSampledReply(const std::string& line) {
  rapidjson::Document doc;
  HB_RETURN_IF_ERROR(ParseJson(line, doc));
  if (!doc.IsObject()) return JsonTypeError("line", "an object", doc);
  SampledReply reply;
  HB_ASSIGN_OR_RETURN(reply.prompt_id, JsonStringMember(doc, "prompt_id"));
  HB_ASSIGN_OR_RETURN(reply.response, JsonStringMember(doc, "response"));
  if (const rapidjson::Value* system = FindJsonMember(doc, "system_prompt")) {
    HB_ASSIGN_OR_RETURN(reply.system_prompt, JsonString(*system, "system_prompt"));
  }
  HB_ASSIGN_OR_RETURN(reply.model, JsonStringMember(doc, "model"));
  HB_ASSIGN_OR_RETURN(reply.finish_reason, JsonStringMember(doc, "finish_reason"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* usage, RequireJsonMember(doc, "usage"));
  if (!usage->IsObject()) return JsonTypeError("usage", "an object", *usage);
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* prompt, RequireJsonMember(*usage, "prompt_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.prompt_tokens, JsonInt(*prompt, "usage.prompt_tokens"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* completion,
                      RequireJsonMember(*usage, "completion_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.completion_tokens,
                      JsonInt(*completion, "usage.completion_tokens"));
  HB_ASSIGN_OR_RETURN(const rapidjson::Value* cached, RequireJsonMember(*usage, "cached_tokens"));
  HB_ASSIGN_OR_RETURN(reply.usage.cached_tokens, JsonInt(*cached, "usage.cached_tokens"));
  return reply;
}

absl::StatusOr<SampleJournal> SampleJournal::Open(const std::string& path,
                                                  const SampleJournalHeader& header) {
  std::string text;
  if (access(path.c_str(), F_OK) == 0) {
    HB_ASSIGN_OR_RETURN(text, ReadFile(path));
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open the sample journal ", path, ": ", std::strerror(errno)));
  }
  SampleJournal journal(path, fd);
  // Keep whole lines only: a torn last line (no newline) is a write the crash interrupted.
  const size_t keep = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  text.resize(keep);
  if (::ftruncate(fd, static_cast<off_t>(keep)) != 0 ||
      ::lseek(fd, 0, SEEK_END) == static_cast<off_t>(-1)) {
    return ErrnoError("cannot truncate the sample journal", path);
  }
  if (text.empty()) {
    HB_RETURN_IF_ERROR(WriteAllAndSync(fd, absl::StrCat(FormatHeader(header), "\n"), path));
    return journal;
  }
  HB_RETURN_IF_ERROR(journal.Replay(header, text));
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
  absl::flat_hash_set<std::string> seen;
  int line_number = 1;
  size_t start = header_end + 1;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ++line_number;
    absl::StatusOr<SampledReply> reply = ParseSampledReply(text.substr(start, end - start));
    if (!reply.ok()) {
      return absl::DataLossError(absl::StrCat(
          path_, ":", line_number, ": corrupt journal line: ", reply.status().message(),
          "; move the journal aside to sample again from scratch"));
    }
    if (seen.insert(reply->prompt_id).second) replies_.push_back(*std::move(reply));
    start = end + 1;
  }
  return absl::OkStatus();
}

SampleJournal::SampleJournal(SampleJournal&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      replies_(std::move(other.replies_)) {}

SampleJournal::~SampleJournal() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status SampleJournal::Append(const std::vector<SampledReply>& replies) {
  if (replies.empty()) return absl::OkStatus();
  std::string data;
  for (const SampledReply& reply : replies) absl::StrAppend(&data, FormatSampledReply(reply), "\n");
  return WriteAllAndSync(fd_, data, path_);
}

}  // namespace hb
