// PreparedReply, what every rubric item of one reply shares, and PreparedReplies, the table that
// lets items graded by separate calls (the orchestrator's GradeItem rows, hb-env's items) share
// one while any of them is in flight.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/healthbench/grader_request_body.h"
#include "common/healthbench/prompts.h"

namespace hb {

// What every rubric item of one reply shares, rendered once (Grader::Prepare): the grader
// template filled with the graded conversation, the prompt cache key, and the request body
// around the rubric item. Immutable; the calls of one reply hold it by shared_ptr instead of
// each copying the conversation.
struct PreparedReply {
  GraderTemplate::WithConversation prompt;
  std::string prompt_cache_key;
  // Escaped once: what goes upstream per item is this plus the item.
  SharedChatCompletionBody body;
};

// Live PreparedReplies by (rendered prompt, prompt cache key). An entry lives exactly as long
// as some holder keeps its reply: the reply's deleter removes it (the deleter holds the table
// by shared_ptr, so replies may outlive the Grader). Thread-safe.
class PreparedReplies : public std::enable_shared_from_this<PreparedReplies> {
 public:
  static std::shared_ptr<PreparedReplies> Create() {
    return std::shared_ptr<PreparedReplies>(new PreparedReplies());
  }

  // The live reply whose prompt text and cache key equal `prompt_text` and `prompt_cache_key`,
  // or null.
  std::shared_ptr<const PreparedReply> Find(absl::string_view prompt_text,
                                            absl::string_view prompt_cache_key);

  // Takes `reply` and returns it registered: Find returns it until its last holder lets go.
  // When a live reply with the same key exists already, returns that one and drops `reply`.
  std::shared_ptr<const PreparedReply> Add(std::unique_ptr<PreparedReply> reply);

  // Live entries (tests, metrics).
  size_t size() const;

 private:
  using Key = std::pair<absl::string_view, absl::string_view>;  // views into the reply
  struct Entry {
    const PreparedReply* reply = nullptr;
    std::weak_ptr<const PreparedReply> weak;
  };
  PreparedReplies() = default;
  void Remove(const PreparedReply* reply);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb
