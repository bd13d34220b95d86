#include "environment/result_cache.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/sha256.h"

namespace hb::env {

namespace {

// Appends `field` length-prefixed, so that no two field sequences serialize alike.
void AppendField(std::string& out, absl::string_view field) {
  absl::StrAppend(&out, field.size(), ":", field, ";");
}

}  // namespace

std::string TaskCacheId(const Example& example) {
  std::string content;
  for (const Message& message : example.prompt) {
    AppendField(content, message.role);
    AppendField(content, message.content);
  }
  AppendField(content, "rubric");
  for (const RubricItem& item : example.rubrics) {
    AppendField(content, item.points_text);
    AppendField(content, item.criterion);
    AppendField(content, item.verbatim ? "verbatim" : "prefixed");
    AppendField(content, absl::StrCat(item.tags.size()));
    for (const std::string& tag : item.tags) AppendField(content, tag);
  }
  return absl::StrCat(example.prompt_id, "#", Sha256Hex(content));
}

std::string SubmissionKey(absl::string_view task, absl::string_view reply,
                          absl::string_view grader_fingerprint) {
  // Lengths first: ids may contain any byte.
  return absl::StrCat(task.size(), ":", task, "|", Sha256Hex(reply), "|", grader_fingerprint);
}

std::optional<SubmitResult> ResultCache::Find(const std::string& key) {
  std::shared_ptr<const SubmitResult> found;
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second);
    found = it->second->second;
  }
  return *found;
}

absl::Status ResultCache::Preload() {
  if (store_ == nullptr || max_entries_ == 0) return absl::OkStatus();
  absl::StatusOr<std::vector<std::pair<std::string, SubmitResult>>> entries = store_->LoadAll();
  if (!entries.ok()) return entries.status();
  for (auto& [key, result] : *entries) Insert(key, std::move(result), /*write_through=*/false);
  return absl::OkStatus();
}

void ResultCache::Put(const std::string& key, SubmitResult result) {
  Insert(key, std::move(result), /*write_through=*/true);
}

void ResultCache::Insert(const std::string& key, SubmitResult result, bool write_through) {
  if (max_entries_ == 0) return;
  std::optional<std::string> evicted;
  auto shared = std::make_shared<const SubmitResult>(std::move(result));
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->second = shared;
      lru_.splice(lru_.begin(), lru_, it->second);
    } else {
      lru_.emplace_front(key, shared);
      index_[key] = lru_.begin();
      if (lru_.size() > max_entries_) {
        evicted = lru_.back().first;
        index_.erase(lru_.back().first);
        lru_.pop_back();
      }
    }
  }
  if (store_ == nullptr) return;
  if (evicted.has_value()) store_->Erase(*evicted);
  if (write_through) store_->Put(key, *shared);
}

size_t ResultCache::size() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

}  // namespace hb::env
