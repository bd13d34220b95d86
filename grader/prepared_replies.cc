#include "grader/prepared_replies.h"

namespace hb {

std::shared_ptr<const PreparedReply> PreparedReplies::Find(absl::string_view prompt_text,
                                                           absl::string_view prompt_cache_key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key{prompt_text, prompt_cache_key});
  return it == entries_.end() ? nullptr : it->second.weak.lock();
}

std::shared_ptr<const PreparedReply> PreparedReplies::Add(std::unique_ptr<PreparedReply> reply) {
  const Key key{reply->prompt.text, reply->prompt_cache_key};
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (std::shared_ptr<const PreparedReply> live = it->second.weak.lock()) return live;
    // Its last holder is letting go right now; its Remove will find the entry replaced.
    entries_.erase(it);
  }
  const PreparedReply* raw = reply.get();
  std::shared_ptr<const PreparedReply> shared(reply.release(),
                                              [table = shared_from_this()](const PreparedReply* r) {
                                                table->Remove(r);
                                                delete r;
                                              });
  entries_.emplace(key, Entry{raw, shared});
  return shared;
}

void PreparedReplies::Remove(const PreparedReply* reply) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(Key{reply->prompt.text, reply->prompt_cache_key});
  if (it != entries_.end() && it->second.reply == reply) entries_.erase(it);
}

size_t PreparedReplies::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace hb
