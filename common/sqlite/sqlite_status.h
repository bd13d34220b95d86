// SqliteStatus: the absl::Status for a failed SQLite call. Database::Error (database.h beside
// it) builds every SQLite error the project reports (run journal, verdict cache, hb-env's result
// store) with it.
#pragma once

#include <sqlite3.h>

#include <string>

#include "absl/status/status.h"

namespace hb {

// `text` with the code SQLite's result code `rc` means: kDataLoss for a corrupt file or not a
// database, kPermissionDenied when it cannot be opened or written, kResourceExhausted when the
// disk is full, kFailedPrecondition when another connection holds a lock, else kInternal.
inline absl::Status SqliteStatus(int rc, std::string text) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(text);
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
      return absl::PermissionDeniedError(text);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(text);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::FailedPreconditionError(text);
    default:
      return absl::InternalError(text);
  }
}

}  // namespace hb
