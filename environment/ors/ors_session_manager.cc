#include "environment/ors/ors_session_manager.h"

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hb::env {

std::string RandomUuid() {
  thread_local absl::BitGen gen;
  const uint64_t hi = absl::Uniform<uint64_t>(gen);
  const uint64_t lo = absl::Uniform<uint64_t>(gen);
  // Version 4 in the high nibble of the third group, variant 10xx in the fourth.
  const uint64_t hi_v4 = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;
  const uint64_t lo_var = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;
  return absl::StrFormat("%08x-%04x-%04x-%04x-%012x", hi_v4 >> 32, (hi_v4 >> 16) & 0xFFFF,
                         hi_v4 & 0xFFFF, lo_var >> 48, lo_var & 0xFFFFFFFFFFFFull);
}

absl::Status CheckSessionId(absl::string_view sid) {
  const bool valid =
      !sid.empty() && sid.size() <= 64 && std::all_of(sid.begin(), sid.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "X-Session-ID must be 1 to 64 characters of A-Z a-z 0-9 - _ (got %d bytes); use the id "
      "POST /create_session returned",
      sid.size()));
}

OrsSessionManager::OrsSessionManager(Clock& clock, Options options,
                                     std::function<std::string()> new_id)
    : clock_(clock), options_(options), new_id_(std::move(new_id)) {
  if (!new_id_) new_id_ = RandomUuid;
}

absl::StatusOr<std::string> OrsSessionManager::Issue() {
  if (sessions_.size() + issued_.size() >= options_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("too many open sessions (%d); delete finished sessions or retry later",
                        options_.max_sessions));
  }
  std::string sid = RandomUuid();
  issued_[sid] = clock_.Now();
  return sid;
}

absl::Status OrsSessionManager::Create(absl::string_view sid, TaskRef task) {
  if (sessions_.size() >= options_.max_sessions && !sessions_.contains(sid) &&
      !issued_.contains(sid)) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("too many open sessions (%d); delete finished sessions or retry later",
                        options_.max_sessions));
  }
  auto [it, inserted] =
      sessions_.try_emplace(std::string(sid), Session{std::move(task), clock_.Now()});
  if (!inserted) return absl::AlreadyExistsError("Session already exists");
  issued_.erase(sid);
  return absl::OkStatus();
}

absl::Status OrsSessionManager::BeginAnswer(absl::string_view sid, const std::string& call_id) {
  auto it = sessions_.find(sid);
  if (it == sessions_.end()) return absl::NotFoundError("Active environment not found");
  Session& session = it->second;
  if (session.finished) {
    return absl::FailedPreconditionError(absl::StrCat(
        "episode already finished: this session's answer was graded (task_id ", session.answer_call,
        "); reconnect with that task_id to read its result, or create a new session"));
  }
  if (!session.answer_call.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "an answer is already being graded in this session (task_id ", session.answer_call,
        "); reconnect with that task_id instead of answering again"));
  }
  session.answer_call = call_id;
  return absl::OkStatus();
}

void OrsSessionManager::ReleaseAnswer(const std::string& sid, absl::string_view call_id) {
  auto it = sessions_.find(sid);
  if (it != sessions_.end() && !it->second.finished && it->second.answer_call == call_id) {
    it->second.answer_call.clear();
  }
}

absl::StatusOr<TaskRef> OrsSessionManager::Touch(absl::string_view sid) {
  auto it = sessions_.find(sid);
  if (it == sessions_.end()) return absl::NotFoundError("Active environment not found");
  it->second.last_active = clock_.Now();
  return it->second.task;
}

bool OrsSessionManager::Delete(absl::string_view sid) {
  const bool issued = issued_.erase(sid) > 0;
  return sessions_.erase(sid) > 0 || issued;
}

std::string OrsSessionManager::StartCall(std::string sid) {
  std::string id = new_id_();
  Call call;
  call.sid = std::move(sid);
  calls_[id] = std::move(call);
  return id;
}

void OrsSessionManager::FinishCall(absl::string_view call_id, std::string payload, bool finished) {
  auto it = calls_.find(call_id);
  if (it == calls_.end() || it->second.done) return;
  it->second.done = true;
  it->second.payload = std::move(payload);
  it->second.finished_at = clock_.Now();
  if (auto session = sessions_.find(it->second.sid);
      finished && session != sessions_.end() && session->second.answer_call == call_id) {
    session->second.finished = true;
  } else {
    ReleaseAnswer(it->second.sid, call_id);
  }
  finished_order_.push_back(it->first);
  ++finished_count_;
  while (finished_count_ > options_.max_finished_calls) ForgetOldestFinished();
}

void OrsSessionManager::DropCall(absl::string_view call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;
  if (it->second.done) --finished_count_;
  ReleaseAnswer(it->second.sid, call_id);
  calls_.erase(it);
}

OrsSessionManager::CallMap::iterator OrsSessionManager::OldestFinished() {
  while (!finished_order_.empty()) {
    auto it = calls_.find(finished_order_.front());
    if (it != calls_.end() && it->second.done) return it;
    finished_order_.pop_front();  // dropped or reaped already
  }
  return calls_.end();
}

void OrsSessionManager::ForgetOldestFinished() {
  auto it = OldestFinished();
  if (it == calls_.end()) return;
  finished_order_.pop_front();
  calls_.erase(it);
  --finished_count_;
}

const OrsSessionManager::Call* OrsSessionManager::FindCall(absl::string_view call_id) const {
  auto it = calls_.find(call_id);
  return it == calls_.end() ? nullptr : &it->second;
}

std::vector<std::string> OrsSessionManager::Reap() {
  const absl::Time now = clock_.Now();
  std::vector<std::string> reaped;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_active > options_.idle_timeout) {
      reaped.push_back(it->first);
      sessions_.erase(it++);
    } else {
      ++it;
    }
  }
  for (auto it = issued_.begin(); it != issued_.end();) {
    if (now - it->second > options_.idle_timeout) {
      issued_.erase(it++);
    } else {
      ++it;
    }
  }
  // finished_order_ is in finishing order: stop at the first call still lingering.
  for (auto it = OldestFinished();
       it != calls_.end() && now - it->second.finished_at >= options_.call_linger;
       it = OldestFinished()) {
    ForgetOldestFinished();
  }
  std::sort(reaped.begin(), reaped.end());
  return reaped;
}

}  // namespace hb::env
