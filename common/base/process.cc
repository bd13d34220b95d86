#include "common/base/process.h"

#include <malloc.h>
#include <pthread.h>

#include <cstdlib>
#include <utility>

namespace hb {

void TuneProcess() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
}

namespace {

// The signals StopSignals takes: SIGINT and SIGTERM.
sigset_t StopSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

StopSignals::StopSignals(Callback on_signal)
    : on_signal_(std::move(on_signal)), set_(StopSignalSet()) {
  pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  thread_ = std::thread([this] {
    int count = 0;
    while (true) {
      int signal = 0;
      if (sigwait(&set_, &signal) != 0) continue;
      if (done_.load()) return;
      {
        absl::MutexLock lock(&mu_);
        if (first_signal_ == 0) first_signal_ = signal;
      }
      if (on_signal_) on_signal_(signal, ++count);
    }
  });
}

StopSignals::~StopSignals() {
  done_.store(true);
  pthread_kill(thread_.native_handle(), SIGTERM);  // wakes sigwait; ignored as done_ is set
  thread_.join();
  // Drop a signal that arrived after the work was over rather than dying from it now.
  sigset_t pending;
  sigpending(&pending);
  timespec zero{0, 0};
  while (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM)) {
    sigtimedwait(&set_, nullptr, &zero);
    sigpending(&pending);
  }
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

StopSignalsBlockedInScope::StopSignalsBlockedInScope() {
  const sigset_t stop = StopSignalSet();
  pthread_sigmask(SIG_BLOCK, &stop, &old_mask_);
}

StopSignalsBlockedInScope::~StopSignalsBlockedInScope() {
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

int StopSignals::Wait() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* signal) { return *signal != 0; }, &first_signal_));
  return first_signal_;
}

bool StopSignals::received() const {
  absl::MutexLock lock(&mu_);
  return first_signal_ != 0;
}

const char* SignalName(int signal) { return signal == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace hb
