// Transport-security flag groups (security/transport_security.h): the server side
// (--tls-cert-file, --tls-key-file, --tls-client-ca-file, --auth-token-file, --allow-insecure)
// for hb-grader and hb-env, and the client side (--grader-tls-ca-file, --grader-tls-cert-file,
// --grader-tls-key-file, --grader-token-file) for callers of hb-grader replicas.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/command_line.h"
#include "security/transport_security.h"

namespace hb::cli {

struct ServerSecurityFlags {
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  std::string auth_token_file;
  bool allow_insecure = false;
};

// Listed in help under "security".
void AddServerSecurityFlags(Command& command, ServerSecurityFlags* flags);

// Loads the token file and checks the set (ValidateServerSecurity). Errors: the token file's
// load errors (naming the file and line), kInvalidArgument for an inconsistent set.
absl::StatusOr<ServerSecurityOptions> ResolveServerSecurity(const ServerSecurityFlags& flags);

// Listed in help under "grader security".
void AddGraderClientSecurityFlags(Command& command, ClientSecurityOptions* options);

}  // namespace hb::cli
