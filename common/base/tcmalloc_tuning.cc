// Linked into every binary built with tcmalloc (hb_link_allocator, cmake/HbHelpers.cmake): at
// start-up, caps the memory tcmalloc's per-thread caches may hold together at 8 MB (its default
// is 32 MB). hb-grader holds ~2,000 calls in flight on a few dozen threads; with the default it
// peaked at 142-145 MB in the memory benchmark (goal 150), with 8 MB at 129-130 MB and the
// same CPU per row (BENCHMARKS.md). TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES in the environment
// still decides when it is set.
#include <gperftools/malloc_extension.h>

#include <cstdlib>

namespace {

struct TcmallocTuning {
  TcmallocTuning() {
    if (std::getenv("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES") != nullptr) return;
    MallocExtension::instance()->SetNumericProperty("tcmalloc.max_total_thread_cache_bytes",
                                                    size_t{8} << 20);
  }
};

const TcmallocTuning kTuning;

}  // namespace
