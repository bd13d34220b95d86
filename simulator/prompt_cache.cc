#include "simulator/prompt_cache.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace hb::sim {
namespace {

constexpr int64_t kBlockBytes = PromptCache::kBlockTokens * 4;
constexpr size_t kMinBlocks = PromptCache::kMinCachedTokens / PromptCache::kBlockTokens;

// chain[i] identifies blocks 0..i of `text` (full 512-byte blocks only).
std::vector<uint64_t> BlockChain(absl::string_view text, size_t max_blocks) {
  const size_t blocks = std::min<size_t>(text.size() / kBlockBytes, max_blocks);
  std::vector<uint64_t> chain;
  chain.reserve(blocks);
  uint64_t h = 0x6862'6c6c'6d73'696dULL;
  for (size_t i = 0; i < blocks; ++i) {
    h = absl::Hash<std::pair<uint64_t, absl::string_view>>{}(
        std::make_pair(h, text.substr(i * kBlockBytes, kBlockBytes)));
    chain.push_back(h);
  }
  return chain;
}

}  // namespace

PromptCache::PromptCache(Options options, const Clock* clock) : options_(options), clock_(clock) {}

int64_t PromptCache::LookupAndStore(absl::string_view prompt_cache_key,
                                    absl::string_view prompt_text) {
  std::vector<uint64_t> chain = BlockChain(prompt_text, prompt_text.size());
  if (chain.size() < kMinBlocks) return 0;
  std::string key = prompt_cache_key.empty() ? absl::StrCat("prefix:", chain[kMinBlocks - 1])
                                             : absl::StrCat("key:", prompt_cache_key);
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  int64_t cached = 0;
  auto it = entries_.find(key);
  if (it != entries_.end() && now - it->second.last_used <= options_.ttl) {
    const auto& old = it->second.chain;
    size_t shared = 0;
    while (shared < old.size() && shared < chain.size() && old[shared] == chain[shared]) {
      ++shared;
    }
    if (shared >= kMinBlocks) cached = static_cast<int64_t>(shared) * kBlockTokens;
  }
  if (it == entries_.end() && entries_.size() >= options_.max_entries) {
    absl::erase_if(entries_,
                   [&](const auto& kv) { return now - kv.second.last_used > options_.ttl; });
    if (entries_.size() >= options_.max_entries) entries_.erase(entries_.begin());
  }
  Entry& entry = entries_[key];
  entry.chain = std::move(chain);
  entry.last_used = now;
  return cached;
}

}  // namespace hb::sim
