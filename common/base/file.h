// Whole-file reading and atomic writing.
#pragma once

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

// Creates `path` and its parents (like `mkdir -p`). kPermissionDenied / kFailedPrecondition
// name the path when it cannot be created or is not a writable directory.
absl::Status MakeDirs(const std::string& path);

}  // namespace hb
