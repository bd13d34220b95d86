#include "orchestrator/watch/checkpoint_watcher.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/file.h"
#include "common/base/sha256.h"
#include "common/base/status_macros.h"

namespace hb {
namespace {

constexpr char kLogPrefix[] = "hb-orchestrator watch: ";
// The folder of every version's run (OUT/versions/<name>/v<N>); never a checkpoint name.
constexpr char kVersionsDir[] = "versions";
constexpr const char* kResponsesFiles[] = {"responses.jsonl", "responses.jsonl.gz"};

// A folder name that can be a checkpoint: run's name alphabet, and none of the names watch itself
// writes in OUT (OUT/<name> is a link beside them).
bool ValidName(const std::string& name) {
  for (const char* reserved :
       {kVersionsDir, "comparison.json", "comparison.html", kWatchJournalFileName}) {
    if (name == reserved) return false;
  }
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Severity of run's exit codes for a pass that graded several checkpoints.
int Severity(int code) {
  switch (code) {
    case 0:
      return 0;
    case 3:
      return 1;
    case 4:
      return 2;
    case 2:
      return 3;
    default:
      return 4;
  }
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<std::string> Sha256OfFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  Sha256 hasher;
  std::string buffer(1 << 20, '\0');
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
    hasher.Update(absl::string_view(buffer.data(), n));
  }
  if (std::ferror(file.get())) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return hasher.FinishHex();
}

bool NaturalLess(absl::string_view a, absl::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = absl::ascii_isdigit(static_cast<unsigned char>(a[i]));
    const bool db = absl::ascii_isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ei = i, ej = j;
      while (ei < a.size() && absl::ascii_isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && absl::ascii_isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      absl::string_view na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;
}

CheckpointWatcher::CheckpointWatcher(CheckpointWatcherOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<CheckpointWatcher>> CheckpointWatcher::Open(
    CheckpointWatcherOptions options) {
  if (!options.grade) return absl::InvalidArgumentError("CheckpointWatcher needs a grade function");
  std::unique_ptr<CheckpointWatcher> watcher(new CheckpointWatcher(std::move(options)));
  const std::string path = absl::StrCat(watcher->options_.out, "/", kWatchJournalFileName);
  HB_ASSIGN_OR_RETURN(watcher->journal_, WatchJournal::Open(path));
  for (const WatchRecord& r : watcher->journal_->records()) {
    const std::string key = absl::StrCat(r.checkpoint, "@", r.Key());
    int& last = watcher->last_version_[r.checkpoint];
    last = std::max(last, r.version);
    if (r.event == "started") watcher->started_[key] = r;
    if (r.event == "graded") watcher->graded_[key] = r.version;
  }
  return watcher;
}

void CheckpointWatcher::Log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "%s%s\n", kLogPrefix, line.c_str());
  }
}

std::string CheckpointWatcher::KeyOf(const std::string& responses_sha256) const {
  return absl::StrCat(responses_sha256, "/", options_.dataset_sha256, "/",
                      options_.grader_fingerprint);
}

std::vector<CheckpointWatcher::Ready> CheckpointWatcher::ScanReady() {
  std::vector<Ready> ready;
  folders_.clear();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(options_.checkpoints_dir, error)) {
    const std::string name = entry.path().filename().string();
    std::error_code is_dir_error;
    if (!entry.is_directory(is_dir_error) || !ValidName(name)) continue;
    const std::string folder = entry.path().string();
    folders_.push_back(folder);
    if (!IsFile(folder + "/" + options_.ready_marker)) continue;  // never read before its marker
    std::string responses;
    for (const char* file : kResponsesFiles) {
      if (IsFile(folder + "/" + file)) responses = folder + "/" + file;
    }
    if (responses.empty()) {
      if (!warned_[name]) {
        Log(absl::StrCat(name, ": has ", options_.ready_marker,
                         " but no responses.jsonl or responses.jsonl.gz; skipped until it has"));
      }
      warned_[name] = true;
      continue;
    }
    ready.push_back(Ready{name, responses});
  }
  // Said once per distinct error (a folder not created yet fails every pass the same way).
  const std::string listing = error ? error.message() : "";
  if (!listing.empty() && listing != listing_error_) {
    Log(absl::StrCat("cannot list ", options_.checkpoints_dir, ": ", listing,
                     "; looked at again every pass"));
  }
  listing_error_ = listing;
  std::sort(ready.begin(), ready.end(),
            [](const Ready& a, const Ready& b) { return NaturalLess(a.name, b.name); });
  return ready;
}

absl::StatusOr<std::string> CheckpointWatcher::ResponsesSha256(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  const FileStamp stamp{static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                        static_cast<int64_t>(st.st_ino)};
  auto cached = hashes_.find(path);
  if (cached != hashes_.end() && cached->second.first == stamp) return cached->second.second;
  HB_ASSIGN_OR_RETURN(std::string sha256, Sha256OfFile(path));
  hashes_[path] = {stamp, sha256};
  return sha256;
}

absl::StatusOr<CheckpointVersion> CheckpointWatcher::VersionFor(const Ready& ready,
                                                                const std::string& sha256) {
  CheckpointVersion v;
  v.name = ready.name;
  v.responses_path = ready.responses_path;
  v.responses_sha256 = sha256;
  const std::string key = absl::StrCat(ready.name, "@", KeyOf(sha256));
  if (auto started = started_.find(key); started != started_.end()) {
    v.version = started->second.version;
    v.run_dir = absl::StrCat(options_.out, "/", started->second.run_dir);
    return v;
  }
  v.version = ++last_version_[ready.name];
  const std::string run_dir = absl::StrCat(kVersionsDir, "/", ready.name, "/v", v.version);
  v.run_dir = absl::StrCat(options_.out, "/", run_dir);
  HB_RETURN_IF_ERROR(Record("started", v, GradeOutcome{}, ""));
  started_[key] = journal_->records().back();
  return v;
}

absl::Status CheckpointWatcher::Record(const char* event, const CheckpointVersion& version,
                                       const GradeOutcome& outcome, const std::string& retry_at) {
  WatchRecord r;
  r.event = event;
  r.checkpoint = version.name;
  r.version = version.version;
  r.responses_sha256 = version.responses_sha256;
  r.dataset_sha256 = options_.dataset_sha256;
  r.grader = options_.grader_fingerprint;
  r.run_dir = absl::StrCat(kVersionsDir, "/", version.name, "/v", version.version);
  r.exit_code = outcome.exit_code;
  r.score = outcome.score;
  r.cost_usd = outcome.cost_usd;
  r.retry_at = retry_at;
  absl::Status appended = journal_->Append(r);
  if (!appended.ok()) return absl::InternalError(appended.message());
  return absl::OkStatus();
}

void CheckpointWatcher::PointAtReport(const CheckpointVersion& version) {
  const std::string report = absl::StrCat(version.run_dir, "/", version.name);
  if (!IsFile(report + "/summary.json")) return;
  // Relative, so OUT can be moved or mounted elsewhere; replaced by a rename (atomic).
  const std::string target =
      absl::StrCat(kVersionsDir, "/", version.name, "/v", version.version, "/", version.name);
  const std::string link = absl::StrCat(options_.out, "/", version.name);
  const std::string temporary = link + ".link-tmp";
  ::unlink(temporary.c_str());
  if (::symlink(target.c_str(), temporary.c_str()) != 0 ||
      ::rename(temporary.c_str(), link.c_str()) != 0) {
    Log(absl::StrCat(version.name, ": cannot point ", link, " at ", target, ": ",
                     std::strerror(errno)));
  }
}

std::vector<std::string> CheckpointWatcher::NamesWithReports() const {
  std::vector<std::string> names;
  for (const auto& [name, last] : last_version_) {
    if (IsFile(absl::StrCat(options_.out, "/", name, "/summary.json"))) names.push_back(name);
  }
  std::sort(names.begin(), names.end(), NaturalLess);
  return names;
}

absl::Status CheckpointWatcher::GradeOne(const CheckpointVersion& version, PassSummary& summary) {
  const std::string key = absl::StrCat(version.name, "@", KeyOf(version.responses_sha256));
  Log(absl::StrCat(version.name, ": queued (version ", version.version, ", responses sha256 ",
                   version.responses_sha256.substr(0, 12), ")"));
  const GradeOutcome outcome = options_.grade(version);
  // OUT/<name> first: whoever reads the journal's outcome finds the report it speaks of.
  PointAtReport(version);
  if (Severity(outcome.exit_code) > Severity(summary.exit_code)) {
    summary.exit_code = outcome.exit_code;
  }
  if (outcome.exit_code == 0) {
    HB_RETURN_IF_ERROR(Record("graded", version, outcome, ""));
    graded_[key] = version.version;
    retries_.erase(key);
    ++summary.graded;
    Log(absl::StrFormat("%s: graded (version %d): score %.4f, cost $%.4f -> %s/%s/report.html",
                        version.name, version.version, outcome.score, outcome.cost_usd,
                        options_.out, version.name));
  } else if (outcome.exit_code == 4) {
    summary.interrupted = true;
    Log(absl::StrCat(version.name, ": interrupted (version ", version.version,
                     "); its graded rows are journaled and the rest resume at the next start"));
  } else {
    Retry& retry = retries_[key];
    const int64_t factor = std::min<int64_t>(int64_t{1} << std::min(retry.failures, 4), 10);
    ++retry.failures;
    retry.at = options_.clock->Now() + options_.poll_interval * factor;
    HB_RETURN_IF_ERROR(Record("failed", version, outcome, Rfc3339(retry.at)));
    ++summary.failed;
    Log(absl::StrCat(version.name, ": failed (version ", version.version, ", exit ",
                     outcome.exit_code, outcome.error.empty() ? "" : ": ", outcome.error,
                     "); not done, retried at ", Rfc3339(retry.at), " (in ",
                     absl::FormatDuration(options_.poll_interval * factor), ")"));
  }
  if (outcome.exit_code != 4 && options_.on_report) {
    const std::vector<std::string> names = NamesWithReports();
    if (!names.empty()) options_.on_report(names);
  }
  return absl::OkStatus();
}

std::vector<CheckpointWatcher::Pending> CheckpointWatcher::ScanPending() {
  std::vector<Pending> pending;
  for (Ready& ready : ScanReady()) {
    absl::StatusOr<std::string> sha256 = ResponsesSha256(ready.responses_path);
    if (!sha256.ok()) {
      Log(absl::StrCat(ready.name, ": ", sha256.status().message(), "; tried again next pass"));
      continue;
    }
    std::string key = absl::StrCat(ready.name, "@", KeyOf(*sha256));
    if (graded_.contains(key)) continue;
    pending.push_back({std::move(ready), *std::move(sha256), std::move(key)});
  }
  return pending;
}

absl::StatusOr<PassSummary> CheckpointWatcher::Pass(const std::atomic<bool>& stop) {
  PassSummary summary;
  const std::vector<Pending> pending = ScanPending();
  int64_t left = static_cast<int64_t>(pending.size());
  if (options_.on_pending) options_.on_pending(left);
  for (const Pending& next : pending) {
    if (stop.load()) break;
    if (auto retry = retries_.find(next.key);
        retry != retries_.end() && options_.clock->Now() < retry->second.at) {
      continue;
    }
    HB_ASSIGN_OR_RETURN(CheckpointVersion version, VersionFor(next.ready, next.sha256));
    HB_RETURN_IF_ERROR(GradeOne(version, summary));
    if (graded_.contains(next.key) && options_.on_pending) options_.on_pending(--left);
    if (summary.interrupted) break;
  }
  return summary;
}

absl::Time CheckpointWatcher::NextPassAt() const {
  absl::Time next = options_.clock->Now() + options_.poll_interval;
  for (const auto& [key, retry] : retries_) next = std::min(next, retry.at);
  return next;
}

}  // namespace hb
