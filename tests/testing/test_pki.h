// A throwaway PKI for TLS tests: a CA, a server certificate for 127.0.0.1/localhost and a client
// certificate, all signed by that CA, made with the `openssl` command (Debian's openssl
// package, in scripts/deps.txt) into a fresh temporary folder.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace hb::testing {

struct TestPki {
  std::string dir;
  std::string ca_cert;
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  // A second CA that signed nothing here: a client trusting only it must fail the handshake.
  std::string other_ca_cert;
};

// kInternal (with openssl's exit status) when a step fails.
absl::StatusOr<TestPki> MakeTestPki();

}  // namespace hb::testing
