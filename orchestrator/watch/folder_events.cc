#include "orchestrator/watch/folder_events.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace hb {

absl::StatusOr<std::unique_ptr<FolderEvents>> FolderEvents::Create() {
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  const int inotify_fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  return std::unique_ptr<FolderEvents>(new FolderEvents(inotify_fd, wake_fd));
}

FolderEvents::~FolderEvents() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  ::close(wake_fd_);
}

void FolderEvents::Watch(const std::string& dir) {
  if (inotify_fd_ < 0 || watched_.contains(dir)) return;
  const uint32_t mask = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB;
  if (::inotify_add_watch(inotify_fd_, dir.c_str(), mask) >= 0) watched_.insert(dir);
}

void FolderEvents::Wake() {
  const uint64_t one = 1;
  // A full counter (never in practice) still leaves the fd readable: the wake is not lost.
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

FolderEvents::Woken FolderEvents::Wait(absl::Time deadline) {
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return Woken::kDeadline;
    const int timeout_ms =
        static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 60 * 60 * 1000));
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, inotify_fd_ >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno != EINTR) return Woken::kDeadline;
    if (ready <= 0) continue;
    alignas(inotify_event) char buffer[64 * 1024];
    if ((fds[0].revents & POLLIN) != 0) {
      uint64_t count = 0;
      [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &count, sizeof(count));
      return Woken::kWake;
    }
    if ((fds[1].revents & POLLIN) != 0) {
      while (::read(inotify_fd_, buffer, sizeof(buffer)) > 0) {
      }
      return Woken::kFolderChanged;
    }
  }
}

}  // namespace hb
