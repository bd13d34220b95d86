#include "orchestrator/run/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
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

absl::StatusOr<std::unique_ptr<OutputLock>> OutputLock::Acquire(const std::string& dir, bool wait) {
  std::string path = dir.empty() || dir.back() == '/' ? dir + kOutputLockFileName
                                                      : absl::StrCat(dir, "/", kOutputLockFileName);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  int locked = ::flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB);
  while (locked != 0 && wait && errno == EINTR) locked = ::flock(fd, LOCK_EX);
  if (locked != 0) {
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

NewOutputDirs::NewOutputDirs(const std::string& dir) {
  std::error_code error;
  std::filesystem::path path = std::filesystem::path(dir).lexically_normal();
  if (!path.empty() && !path.has_filename()) path = path.parent_path();  // "out/" -> "out"
  while (!path.empty() && !std::filesystem::exists(path, error) && !error) {
    created_.push_back(path.string());
    if (!path.has_parent_path() || path.parent_path() == path) break;
    path = path.parent_path();
  }
}

void NewOutputDirs::RemoveIfUnused() const {
  if (created_.empty()) return;
  std::error_code error;
  const std::filesystem::path dir(created_.front());
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename() != kOutputLockFileName) return;  // something was written
  }
  if (error) return;
  std::filesystem::remove(dir / kOutputLockFileName, error);
  for (const std::string& folder : created_) {
    if (!std::filesystem::remove(folder, error)) return;  // not empty, or already gone
  }
}

}  // namespace hb
