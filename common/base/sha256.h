// SHA-256 as lowercase hex, over bytes or a file (OpenSSL EVP underneath).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

// Hex SHA-256 of `data`.
std::string Sha256Hex(absl::string_view data);

// Incremental hashing, for data that arrives in pieces.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(absl::string_view data);
  // Returns the hex digest; the object must not be updated afterwards.
  std::string FinishHex();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

}  // namespace hb
