#include "common/base/process.h"

#include <malloc.h>

#include <cstdlib>

#include "absl/synchronization/mutex.h"

namespace hb {

void TuneProcess() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
}

}  // namespace hb
