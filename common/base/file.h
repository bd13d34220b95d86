// Whole-file reading and atomic writing.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

// Reads `path` whole. Gzip-compressed files (any name; detected by content) are decompressed
// transparently. Errors: kNotFound when the file does not exist, kPermissionDenied when it
// cannot be opened, kDataLoss for a corrupt gzip stream; each message names the path.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `contents` to `path` through a temporary file in the same folder and a rename, so
// readers see the old or the new file, never a torn one. Errors name the path.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Writes a file piece by piece with WriteFileAtomically's guarantee, without holding the whole
// contents in memory: Append buffers the bytes (writing them to a temporary file in the same
// folder, "<path>.tmp.<pid>", whenever the buffer fills) and Commit flushes, fsyncs and renames
// the temporary file over `path`. Readers see the old file or the complete new one, never a
// torn one. A writer destroyed without a successful Commit removes its temporary file and
// leaves `path` untouched.
//
//   HB_ASSIGN_OR_RETURN(std::unique_ptr<AtomicFileWriter> out, AtomicFileWriter::Open(path));
//   for (...) out->Append(line);
//   HB_RETURN_IF_ERROR(out->Commit());
//
// Errors name `path` (the same codes and messages as WriteFileAtomically). Not thread-safe.
class AtomicFileWriter {
 public:
  // Creates the temporary file. `buffer_size` bytes are buffered between writes (Appends of at
  // least that size are written directly).
  static absl::StatusOr<std::unique_ptr<AtomicFileWriter>> Open(const std::string& path,
                                                                size_t buffer_size = 1 << 20);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  // Without a successful Commit: closes and removes the temporary file.
  ~AtomicFileWriter();

  // Appends `data`. A write error is kept: later Appends do nothing and Commit returns it.
  void Append(absl::string_view data);
  // Writes what is buffered, fsyncs, closes and renames the temporary file to `path`. Returns
  // the first error (of this call or of an earlier Append). Call at most once.
  absl::Status Commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd, size_t buffer_size);
  absl::Status WriteAll(absl::string_view data);
  void Abandon();

  const std::string path_;
  const std::string tmp_;
  int fd_;
  const size_t buffer_size_;
  std::string buffer_;
  absl::Status status_;
  bool committed_ = false;
};

// Creates `path` and its parents (like `mkdir -p`). kPermissionDenied / kFailedPrecondition
// name the path when it cannot be created or is not a writable directory.
absl::Status MakeDirs(const std::string& path);

// MakeDirs(folder) for the output of a command given as `flag` `value` (e.g. "--out" and the
// folder itself, or a file in `folder`), before the command does any work. Every error is
// kFailedPrecondition (a usage error, exit 2) naming the flag, its value, the reason and the fix:
// "--out /data/run: cannot create directory /data: Permission denied; give --out a path this
// user can write (or create the folder with write permission first)".
absl::Status MakeOutputDirs(absl::string_view flag, absl::string_view value,
                            const std::string& folder);

}  // namespace hb
