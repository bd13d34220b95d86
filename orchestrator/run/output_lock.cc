#include "orchestrator/run/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace hb {
namespace {

// The pid the holder wrote, as text ("?" when it wrote none yet).
std::string HolderPid(int fd) {
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  const std::string pid(absl::StripAsciiWhitespace(n > 0 ? buffer : ""));
  return pid.empty() ? "?" : pid;
}

}  // namespace

absl::StatusOr<std::unique_ptr<OutputLock>> OutputLock::Acquire(const std::string& dir) {
  std::string path = dir.empty() || dir.back() == '/' ? dir + kOutputLockFileName
                                                      : absl::StrCat(dir, "/", kOutputLockFileName);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string message =
        error == EWOULDBLOCK
            ? absl::StrCat("another hb-orchestrator holds ", path, " (pid ", HolderPid(fd),
                           "); wait for it to finish or use another --out")
            : absl::StrCat("cannot lock ", path, ": ", std::strerror(error));
    ::close(fd);
    return absl::FailedPreconditionError(message);
  }
  // Best effort: the pid only makes the message of a second run more useful.
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock holds without the pid.
  }
  return std::unique_ptr<OutputLock>(new OutputLock(std::move(path), fd));
}

OutputLock::~OutputLock() { ::close(fd_); }

}  // namespace hb
