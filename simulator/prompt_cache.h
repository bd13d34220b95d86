// The simulated prompt cache of hb-llm-sim (OpenAI's automatic prefix caching).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"

namespace hb::sim {

// Rules, exactly:
// * A prompt (PromptText) is cut into blocks of 128 tokens = 512 bytes; a trailing partial block
//   is never cached. Prompts shorter than 1,024 tokens (8 blocks, 4,096 bytes) are never cached
//   and never stored.
// * Entry key: "key:" + prompt_cache_key when the request has one; otherwise "prefix:" + a hash
//   of the first 1,024 tokens (8 blocks).
// * Each entry remembers the block-chain hashes of the MOST RECENT prompt stored under its key
//   and when it was last used. An entry unused for longer than `ttl` is expired.
// * cached_tokens = 128 * (number of leading blocks identical to the entry's prompt) when that
//   is >= 1,024 tokens, else 0. The current prompt then replaces the entry's prompt and
//   refreshes its time (also when it was a miss).
// Thread-safe.
class PromptCache {
 public:
  struct Options {
    absl::Duration ttl = absl::Minutes(5);
    size_t max_entries = 200000;  // beyond this, expired entries are swept, then any dropped
  };
  static constexpr int64_t kBlockTokens = 128;
  static constexpr int64_t kMinCachedTokens = 1024;

  // `clock` is not owned and must outlive the cache.
  PromptCache(Options options, const Clock* clock);

  // Returns cached_tokens for this prompt and records it (see the class comment).
  int64_t LookupAndStore(absl::string_view prompt_cache_key, absl::string_view prompt_text);

 private:
  struct Entry {
    std::vector<uint64_t> chain;  // chain[i] = hash of blocks 0..i
    absl::Time last_used;
  };
  const Options options_;
  const Clock* const clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hb::sim
