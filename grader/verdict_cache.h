// VerdictCache: accepted grader replies keyed by the exact upstream request, so a request that
// was already answered is not paid for twice (`--verdict-cache PATH`, opt-in: a hit reuses one
// sample of a temperature-0.5 grader instead of drawing a new one). SqliteVerdictCache
// (sqlite_verdict_cache.h) is the implementation; tests may use an in-memory fake.
//
// The key (VerdictCacheKey) is the sha256 of the chat-completions body without
// `prompt_cache_key`: model, temperature, max_tokens and messages, i.e. everything that can
// change a verdict and nothing that cannot.
#pragma once

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "common/healthbench/types.h"
#include "llm/llm_client.h"

namespace hb {

// What a hit gives back: the grader's reply verbatim (parsed again on a hit, so a hit and a miss
// produce the verdict the same way), the model the endpoint reported, and the usage of the
// grading that produced it (what the hit saved).
struct CachedVerdict {
  std::string raw_reply;
  std::string model;
  ChatUsage usage;
};

class VerdictCache {
 public:
  virtual ~VerdictCache() = default;

  // The entry under `key`, or nullopt (also when the backend cannot be read: a cache never
  // fails a grading; the implementation logs it). Thread-safe; may block briefly on I/O.
  virtual std::optional<CachedVerdict> Lookup(const std::string& key) = 0;

  // Records `verdict` under `key` (the first entry wins; later ones for the same key are
  // ignored). Write errors are logged, never returned. Thread-safe; may block briefly on I/O.
  virtual void Store(const std::string& key, const CachedVerdict& verdict) = 0;
};

// The cache key of one rubric item's request: hex sha256 of
// BuildGraderRequestBody(settings, grader_prompt) without a prompt_cache_key (so the model, the
// API, the reasoning effort and the extra body are all part of the key). A `verbatim` item's key
// (a meta-eval row's raw rubric, RubricItem::verbatim) is the sha256 of "verbatim\n" + that body
// instead, so the two renderings never share a verdict, even where the prompts coincide (a raw
// rubric that itself reads "[5] ..."); the rendered items' keys are unchanged. When
// --llm-header gave headers, "\nheaders:" and their HeadersIdentity follow (a judge behind
// another gateway or key is another judge; a grader without headers keeps the keys it always
// had).
std::string VerdictCacheKey(const GraderSettings& settings, absl::string_view grader_prompt,
                            bool verbatim = false);

}  // namespace hb
