// InMemoryVerdictCache: the VerdictCache double (entries in a map, first entry wins, every
// lookup counted). Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grader/verdict_cache.h"

namespace hb::testing {

class InMemoryVerdictCache final : public VerdictCache {
 public:
  std::optional<CachedVerdict> Lookup(const std::string& key) override {
    absl::MutexLock lock(&mu_);
    ++lookups_;
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }
  void Store(const std::string& key, const CachedVerdict& verdict) override {
    absl::MutexLock lock(&mu_);
    entries_.emplace(key, verdict);
  }

  std::map<std::string, CachedVerdict> entries() const {
    absl::MutexLock lock(&mu_);
    return entries_;
  }
  int lookups() const {
    absl::MutexLock lock(&mu_);
    return lookups_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, CachedVerdict> entries_ ABSL_GUARDED_BY(mu_);
  int lookups_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace hb::testing
