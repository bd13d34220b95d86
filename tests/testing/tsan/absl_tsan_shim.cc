// Makes Debian's uninstrumented absl::Mutex, CondVar, Notification and BlockingCounter visible
// to ThreadSanitizer. Linked into every executable of the TSan build only (HB_SANITIZE=thread,
// see cmake/HbHelpers.cmake), never into a production build.
//
// Debian's libabsl_synchronization is compiled without -fsanitize=thread, so its own TSan
// annotations (ABSL_TSAN_MUTEX_*) are compiled out and TSan sees no lock at all: every access an
// absl::Mutex guards looks like a race. This file defines the exported entry points again in the
// executable. The dynamic linker binds every call to them to these definitions first (ours, gRPC
// core's, and the calls inside libabsl_synchronization itself, which go through its PLT); each
// one tells TSan what the call does with __tsan_mutex_* / __tsan_release / __tsan_acquire, the
// same annotations an instrumented Abseil makes, and calls the real function
// (dlsym(RTLD_NEXT, ...)), so locking behaves exactly as before.
//
// The *WithTimeout variants are not forwarded: Abseil implements them by calling the
// *WithDeadline variant through the PLT, which would annotate twice. They call our *WithDeadline
// instead, exactly as the library does (deadline = absl::Now() + timeout).

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#if !defined(__SANITIZE_THREAD__)
#error "absl_tsan_shim.cc belongs in the -fsanitize=thread build only"
#endif

namespace {

#define HB_STRINGIFY_INNER(x) #x
#define HB_STRINGIFY(x) HB_STRINGIFY_INNER(x)

// The Itanium mangled name of absl::<inline namespace>::<nested>: `nested` is the mangled tail,
// e.g. "5Mutex4LockEv" for Mutex::Lock(), with a leading 'K' for a const member function.
std::string AbslSymbol(const char* nested) {
  const std::string ns = HB_STRINGIFY(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  std::string name = "_ZN";
  if (*nested == 'K') name += *nested++;
  return name + "4absl" + std::to_string(ns.size()) + ns + nested;
}

// The library's definition of the function `nested` names; aborts when there is none (a
// different Abseil ABI), since carrying on would call ourselves forever.
template <typename Fn>
Fn Real(const char* nested) {
  const std::string name = AbslSymbol(nested);
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "absl_tsan_shim: %s not found in the loaded Abseil (%s)\n", name.c_str(),
                 dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// Each HB_REAL(...) resolves once, on first use (Abseil locks mutexes during static
// initialisation, possibly before this file's initialisers run).
#define HB_REAL(type, nested)                \
  ([] {                                      \
    using Fn = type;                         \
    static const Fn real = Real<Fn>(nested); \
    return real;                             \
  }())

using Method = void (*)(absl::Mutex*);
using TryMethod = bool (*)(absl::Mutex*);
using CondMethod = void (*)(absl::Mutex*, const absl::Condition&);
using CondDeadlineMethod = bool (*)(absl::Mutex*, const absl::Condition&, absl::Time);

// TSan's flags for how `mu` is held right now by the calling thread (Await and CondVar::Wait
// accept a reader lock too). kMuWriter is bit 3 of absl::Mutex's state word.
unsigned HeldFlags(const absl::Mutex* mu) {
  static_assert(sizeof(absl::Mutex) == sizeof(std::atomic<intptr_t>), "Mutex layout changed");
  constexpr intptr_t kMuWriter = 0x0008;
  const auto* word = reinterpret_cast<const std::atomic<intptr_t>*>(mu);
  return (word->load(std::memory_order_relaxed) & kMuWriter) ? 0u : __tsan_mutex_read_lock;
}

// Runs `wait`, which releases `mu` and takes it back before returning (Await, CondVar::Wait),
// as an unlock followed by a lock. Everything in between is ignored, as in Abseil's own
// annotations: conditions are evaluated by whichever thread holds the lock.
template <typename Wait>
auto AroundWait(absl::Mutex* mu, Wait wait) {
  const unsigned flags = HeldFlags(mu);
  __tsan_mutex_pre_unlock(mu, flags);
  auto result = wait();
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

template <typename Acquire>
auto AroundLock(absl::Mutex* mu, unsigned flags, Acquire acquire) {
  __tsan_mutex_pre_lock(mu, flags);
  auto result = acquire();
  __tsan_mutex_post_lock(mu, flags, 0);
  return result;
}

template <typename Try>
bool AroundTryLock(absl::Mutex* mu, unsigned flags, Try try_lock) {
  flags |= __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(mu, flags);
  const bool locked = try_lock();
  __tsan_mutex_post_lock(mu, locked ? flags : flags | __tsan_mutex_try_lock_failed, 0);
  return locked;
}

void AroundUnlock(absl::Mutex* mu, unsigned flags, Method unlock) {
  __tsan_mutex_pre_unlock(mu, flags);
  unlock(mu);
  __tsan_mutex_post_unlock(mu, flags);
}

// The atomic that follows the Mutex at the start of a Notification (notified_yet_, which the
// inline HasBeenNotified() loads with acquire) or a BlockingCounter (count_). Releasing and
// acquiring there adds the edge the library's uninstrumented atomic operations make.
template <typename T>
void* AtomicAfterMutex(const T* object) {
  static_assert(sizeof(T) >= 2 * sizeof(absl::Mutex), "layout changed");
  return const_cast<char*>(reinterpret_cast<const char*>(object) + sizeof(absl::Mutex));
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// As Abseil's own annotation: __tsan_mutex_not_static makes the destroy a no-op for a mutex
// whose constructor TSan never saw (one built inside gRPC, whose reference counts TSan cannot
// see either), and a checked write for ours (the inline constructor announces them).
Mutex::~Mutex() {
  __tsan_mutex_destroy(this, __tsan_mutex_not_static);
  HB_REAL(Method, "5MutexD2Ev")(this);
}

void Mutex::Lock() {
  AroundLock(this, 0, [this] { return HB_REAL(Method, "5Mutex4LockEv")(this), 0; });
}

void Mutex::ReaderLock() {
  AroundLock(this, __tsan_mutex_read_lock,
             [this] { return HB_REAL(Method, "5Mutex10ReaderLockEv")(this), 0; });
}

bool Mutex::TryLock() {
  return AroundTryLock(this, 0, [this] { return HB_REAL(TryMethod, "5Mutex7TryLockEv")(this); });
}

bool Mutex::ReaderTryLock() {
  return AroundTryLock(this, __tsan_mutex_read_lock,
                       [this] { return HB_REAL(TryMethod, "5Mutex13ReaderTryLockEv")(this); });
}

void Mutex::Unlock() { AroundUnlock(this, 0, HB_REAL(Method, "5Mutex6UnlockEv")); }

void Mutex::ReaderUnlock() {
  AroundUnlock(this, __tsan_mutex_read_lock, HB_REAL(Method, "5Mutex12ReaderUnlockEv"));
}

void Mutex::LockWhen(const Condition& cond) {
  AroundLock(this, 0, [&] {
    return HB_REAL(CondMethod, "5Mutex8LockWhenERKNS0_9ConditionE")(this, cond), 0;
  });
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  AroundLock(this, __tsan_mutex_read_lock, [&] {
    return HB_REAL(CondMethod, "5Mutex14ReaderLockWhenERKNS0_9ConditionE")(this, cond), 0;
  });
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  return AroundLock(this, 0, [&] {
    return HB_REAL(CondDeadlineMethod, "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE")(
        this, cond, deadline);
  });
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  return AroundLock(this, __tsan_mutex_read_lock, [&] {
    return HB_REAL(CondDeadlineMethod,
                   "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE")(this, cond,
                                                                                     deadline);
  });
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  return LockWhenWithDeadline(cond, absl::Now() + timeout);
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  return ReaderLockWhenWithDeadline(cond, absl::Now() + timeout);
}

void Mutex::Await(const Condition& cond) {
  AroundWait(this,
             [&] { return HB_REAL(CondMethod, "5Mutex5AwaitERKNS0_9ConditionE")(this, cond), 0; });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  return AroundWait(this, [&] {
    return HB_REAL(CondDeadlineMethod, "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE")(
        this, cond, deadline);
  });
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  return AwaitWithDeadline(cond, absl::Now() + timeout);
}

void CondVar::Wait(Mutex* mu) {
  AroundWait(mu, [&] {
    return HB_REAL(void (*)(CondVar*, Mutex*), "7CondVar4WaitEPNS0_5MutexE")(this, mu), 0;
  });
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  return AroundWait(mu, [&] {
    return HB_REAL(bool (*)(CondVar*, Mutex*, absl::Time),
                   "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE")(this, mu, deadline);
  });
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  return WaitWithDeadline(mu, absl::Now() + timeout);
}

// Notification: Notify() sets the flag inside the library, and HasBeenNotified() (inline, so
// instrumented) or the wait functions' fast path read it without taking the mutex. Release and
// acquire on the flag's address carry the happens-before edge TSan would otherwise miss.
void Notification::Notify() {
  __tsan_release(AtomicAfterMutex(this));
  HB_REAL(void (*)(Notification*), "12Notification6NotifyEv")(this);
}

void Notification::WaitForNotification() const {
  HB_REAL(void (*)(const Notification*), "K12Notification19WaitForNotificationEv")(this);
  __tsan_acquire(AtomicAfterMutex(this));
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  const bool notified =
      HB_REAL(bool (*)(const Notification*, absl::Time),
              "K12Notification31WaitForNotificationWithDeadlineENS0_4TimeE")(this, deadline);
  if (notified) __tsan_acquire(AtomicAfterMutex(this));
  return notified;
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  const bool notified =
      HB_REAL(bool (*)(const Notification*, absl::Duration),
              "K12Notification30WaitForNotificationWithTimeoutENS0_8DurationE")(this, timeout);
  if (notified) __tsan_acquire(AtomicAfterMutex(this));
  return notified;
}

// BlockingCounter: only the last DecrementCount() takes the mutex; the others decrement an
// atomic inside the library. Each one releases, and Wait() acquires, on the counter.
bool BlockingCounter::DecrementCount() {
  __tsan_release(AtomicAfterMutex(this));
  return HB_REAL(bool (*)(BlockingCounter*), "15BlockingCounter14DecrementCountEv")(this);
}

void BlockingCounter::Wait() {
  HB_REAL(void (*)(BlockingCounter*), "15BlockingCounter4WaitEv")(this);
  __tsan_acquire(AtomicAfterMutex(this));
}

ABSL_NAMESPACE_END
}  // namespace absl
