// OrsSessionManager: the state of the Open Reward Standard transport without sockets: which
// sessions exist (session id -> task, last activity), which tool calls are running or have
// finished (call id -> serialized RunToolOutput), and the reaping of idle sessions and of
// finished calls nobody came back for. Time comes from an injected Clock, so a test reaps
// instantly.
//
// Semantics follow the reference server (ors/server.py, ors/_reconnect.py):
//  - a session is idle when nothing touched it (create, ping, prompt, task_tools, call) for
//    longer than `idle_timeout`;
//  - a call id names one submission; a finished call's result stays readable for
//    `call_linger` after it finished so that a client that lost the stream can reconnect by id
//    and read it, instead of submitting again. Running calls are never evicted.
// Sessions are the server's (as the Open Reward Standard means them): Issue() makes an id
// (POST /create_session) and only an issued id can be created (POST /create); every id is
// checked by CheckSessionId before it is looked up. A session is one episode: once its answer
// was graded (FinishCall with finished = true), BeginAnswer refuses another, and while one
// is being graded it refuses a second, so a policy cannot take the best of several rewards.
// A call belongs to the session that started it.
// Both are bounded so that a flood of cheap requests cannot grow the process: at most
// `max_sessions` sessions (Create answers kResourceExhausted past it), and at most
// `max_finished_calls` finished results kept (the oldest finished is forgotten first, as if
// its linger had run out).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "environment/environment.h"

namespace hb::env {

// A random RFC 4122 version-4 UUID ("8-4-4-4-12" lowercase hex). Thread-safe.
std::string RandomUuid();

// OK for 1 to 64 characters of [A-Za-z0-9_-]; else kInvalidArgument naming the header, the
// rule and the length received (the id itself is not echoed).
absl::Status CheckSessionId(absl::string_view sid);

class OrsSessionManager {
 public:
  struct Options {
    absl::Duration idle_timeout = absl::Minutes(15);
    absl::Duration call_linger = absl::Seconds(60);
    size_t max_sessions = 100000;
    // About 4.5 KB each for a real task's result: 20,000 is ~90 MB at most.
    size_t max_finished_calls = 20000;
  };

  // A tool call: `done` once its result is known; `payload` is then the JSON RunToolOutput.
  struct Call {
    bool done = false;
    std::string payload;
    absl::Time finished_at = absl::InfinitePast();
    std::string sid;  // the session that started it ("" for none)
  };

  // `clock` is not owned and must outlive the manager. `new_id` makes call ids (RandomUuid
  // when empty; tests pass a counter).
  OrsSessionManager(Clock& clock, Options options, std::function<std::string()> new_id = {});

  // A new session id (a UUID), valid for Create until it has been idle for idle_timeout.
  // kResourceExhausted when max_sessions ids are issued or open.
  absl::StatusOr<std::string> Issue();
  // Whether `sid` was issued and not created, deleted or reaped since.
  bool IsIssued(absl::string_view sid) const { return issued_.contains(sid); }
  // Registers session `sid` for `task` (and forgets it as issued). kAlreadyExists
  // "Session already exists"; kResourceExhausted when max_sessions are open.
  absl::Status Create(absl::string_view sid, TaskRef task);
  // The task of session `sid`, and marks it active now. kNotFound "Active environment not
  // found" when the session does not exist (never created, deleted or reaped).
  absl::StatusOr<TaskRef> Touch(absl::string_view sid);
  // Forgets `sid`, created or only issued; false when it was neither. Its running calls keep
  // running.
  bool Delete(absl::string_view sid);

  // Makes `call_id` (started by StartCall(sid)) the answer of session `sid`'s episode.
  // kNotFound for no such session; kFailedPrecondition when the episode already has its
  // reward, or another answer is being graded (the message says which, with its call id).
  absl::Status BeginAnswer(absl::string_view sid, const std::string& call_id);
  size_t session_count() const { return sessions_.size(); }

  // A new running call of session `sid`; returns its id.
  std::string StartCall(std::string sid = "");
  // Records the result of a running call (unknown or finished ids are ignored); forgets the
  // oldest finished call when more than max_finished_calls are kept. `finished`: the result
  // is a reward, which ends its session's episode; otherwise the session may answer again.
  void FinishCall(absl::string_view call_id, std::string payload, bool finished = false);
  // Forgets a call at once (a submission the environment rejected up front).
  void DropCall(absl::string_view call_id);
  // The call, or nullptr for an unknown (never started, dropped or evicted) id. The pointer is
  // valid until the next non-const call.
  const Call* FindCall(absl::string_view call_id) const;
  size_t call_count() const { return calls_.size(); }

  // Deletes every session idle for longer than idle_timeout and every call finished at least
  // call_linger ago; returns the ids of the sessions deleted, sorted.
  std::vector<std::string> Reap();

 private:
  using CallMap = absl::flat_hash_map<std::string, Call>;
  // The oldest finished call still kept (stale ids at the front of finished_order_ are
  // dropped on the way), or calls_.end().
  CallMap::iterator OldestFinished();
  // Erases the oldest finished call still kept, if any.
  void ForgetOldestFinished();

  struct Session {
    TaskRef task;
    absl::Time last_active;
    std::string answer_call;  // the answer being graded or graded ("" for none)
    bool finished = false;    // the episode has its reward
  };
  // The session's answer call is over without a reward: it may answer again.
  void ReleaseAnswer(const std::string& sid, absl::string_view call_id);

  Clock& clock_;
  const Options options_;
  std::function<std::string()> new_id_;
  absl::flat_hash_map<std::string, Session> sessions_;
  // Issued ids not created yet -> when they were issued.
  absl::flat_hash_map<std::string, absl::Time> issued_;
  CallMap calls_;
  // Ids of finished calls in the order they finished (so also by finished_at); may name calls
  // already dropped or reaped, which are skipped.
  std::deque<std::string> finished_order_;
  size_t finished_count_ = 0;
};

}  // namespace hb::env
