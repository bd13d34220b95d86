#include "common/base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hb {
namespace {

absl::Status ErrnoStatus(int err, absl::string_view what, const std::string& path) {
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot read", path);
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("cannot read ", path, ": is a directory"));
  }
  // gzopen reads plain files transparently, so one path serves both.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoStatus(errno, "cannot open", path);
  gzbuffer(file, 1 << 17);
  std::string contents;
  contents.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int zerr = 0;
      std::string message = gzerror(file, &zerr);
      gzclose(file);
      return absl::DataLossError(absl::StrCat("cannot read ", path, ": ", message));
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  // gzread reports a truncated stream as a plain end of file; gzerror still says Z_BUF_ERROR.
  int zerr = Z_OK;
  std::string message = gzerror(file, &zerr);
  gzclose(file);
  if (zerr != Z_OK && zerr != Z_STREAM_END) {
    return absl::DataLossError(
        absl::StrCat("cannot read ", path, ": ", message, " (truncated or corrupt gzip file?)"));
  }
  return contents;
}

absl::StatusOr<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::Open(const std::string& path,
                                                                         size_t buffer_size) {
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot write", path);
  return std::unique_ptr<AtomicFileWriter>(
      new AtomicFileWriter(path, std::move(tmp), fd, buffer_size));
}

AtomicFileWriter::AtomicFileWriter(std::string path, std::string tmp, int fd, size_t buffer_size)
    : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd), buffer_size_(buffer_size) {
  buffer_.reserve(buffer_size_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) Abandon();
}

void AtomicFileWriter::Abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
  }
}

absl::Status AtomicFileWriter::WriteAll(absl::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write", path_);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void AtomicFileWriter::Append(absl::string_view data) {
  if (!status_.ok() || fd_ < 0) return;
  if (buffer_.size() + data.size() <= buffer_size_) {
    buffer_.append(data.data(), data.size());
    return;
  }
  if (!buffer_.empty()) {
    status_ = WriteAll(buffer_);
    buffer_.clear();
    if (!status_.ok()) return;
  }
  if (data.size() >= buffer_size_) {
    status_ = WriteAll(data);
  } else {
    buffer_.append(data.data(), data.size());
  }
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) {
    return status_.ok() ? absl::FailedPreconditionError(
                              absl::StrCat("cannot write ", path_, ": already committed"))
                        : status_;
  }
  if (status_.ok() && !buffer_.empty()) status_ = WriteAll(buffer_);
  std::string().swap(buffer_);
  if (!status_.ok()) {
    Abandon();
    return status_;
  }
  int err = ::fsync(fd_) != 0 ? errno : 0;
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err != 0) {
    ::unlink(tmp_.c_str());
    status_ = ErrnoStatus(err, "cannot write", path_);
    return status_;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    err = errno;
    ::unlink(tmp_.c_str());
    status_ = ErrnoStatus(err, "cannot write", path_);
    return status_;
  }
  committed_ = true;
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  // No buffer: the contents go to the file in one write.
  absl::StatusOr<std::unique_ptr<AtomicFileWriter>> writer = AtomicFileWriter::Open(path, 0);
  if (!writer.ok()) return writer.status();
  (*writer)->Append(contents);
  return (*writer)->Commit();
}

absl::Status MakeDirs(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("empty directory path");
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "cannot create directory", partial);
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "cannot create directory", path);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("not a directory: ", path));
  }
  if (::access(path.c_str(), W_OK) != 0) {
    return ErrnoStatus(errno, "directory is not writable", path);
  }
  return absl::OkStatus();
}

absl::Status MakeOutputDirs(absl::string_view flag, absl::string_view value,
                            const std::string& folder) {
  const absl::Status made = MakeDirs(folder);
  if (made.ok()) return made;
  return absl::FailedPreconditionError(absl::StrCat(
      flag, " ", value, ": ", made.message(), "; give ", flag,
      " a path this user can write (or create the folder with write permission first)"));
}

}  // namespace hb
