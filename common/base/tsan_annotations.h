// Happens-before edges that ThreadSanitizer cannot see because the library that creates them is
// not instrumented (Debian's gRPC is built without -fsanitize=thread). Outside the TSan build
// (scripts/ci_sanitizers.sh tsan) both functions do nothing.
//
// Use them only to state a guarantee the library documents, e.g. "everything before a gRPC
// callback call is started happens before its reaction runs": TsanRelease(&tag) before the
// start, TsanAcquire(&tag) first thing in the reaction. Never to silence a report in our code.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace hb {

// Everything this thread did so far happens before a later TsanAcquire(addr) on any thread.
inline void TsanRelease([[maybe_unused]] void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(addr);
#endif
}

// Pairs with every earlier TsanRelease(addr).
inline void TsanAcquire([[maybe_unused]] void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(addr);
#endif
}

}  // namespace hb
