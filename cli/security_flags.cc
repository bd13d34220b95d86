#include "cli/security_flags.h"

#include "common/base/status_macros.h"

namespace hb::cli {

void AddServerSecurityFlags(Command& command, ServerSecurityFlags* flags) {
  command.Group("security");
  command.Flag("auth-token-file", &flags->auth_token_file, "PATH",
               "file of accepted bearer tokens, one per line ('#' comments); callers send "
               "'authorization: Bearer <token>' (HTTP also X-API-Key). Health stays open");
  command.Flag("tls-cert-file", &flags->tls_cert_file, "PATH",
               "PEM server certificate chain; serves TLS (with --tls-key-file)");
  command.Flag("tls-key-file", &flags->tls_key_file, "PATH", "PEM private key of --tls-cert-file");
  command.Flag("tls-client-ca-file", &flags->tls_client_ca_file, "PATH",
               "PEM CA bundle; clients must present a certificate it signed (mTLS)");
  command.Bool("allow-insecure", &flags->allow_insecure,
               "serve a non-loopback address with neither tokens nor mTLS (only behind a "
               "network policy that already restricts callers)");
}

absl::StatusOr<ServerSecurityOptions> ResolveServerSecurity(const ServerSecurityFlags& flags) {
  ServerSecurityOptions options;
  options.tls_cert_file = flags.tls_cert_file;
  options.tls_key_file = flags.tls_key_file;
  options.tls_client_ca_file = flags.tls_client_ca_file;
  options.allow_insecure = flags.allow_insecure;
  if (!flags.auth_token_file.empty()) {
    HB_ASSIGN_OR_RETURN(options.tokens, BearerTokens::LoadFile(flags.auth_token_file));
  }
  HB_RETURN_IF_ERROR(ValidateServerSecurity(options));
  return options;
}

void AddGraderClientSecurityFlags(Command& command, ClientSecurityOptions* options) {
  command.Group("grader security");
  command.Flag("grader-token-file", &options->token_file, "PATH",
               "file whose first token is sent to the hb-grader replicas as 'authorization: "
               "Bearer <token>'");
  command.Flag("grader-tls-ca-file", &options->tls_ca_file, "PATH",
               "PEM CA bundle that signed the replicas' certificate; turns TLS on");
  command.Flag("grader-tls-cert-file", &options->tls_cert_file, "PATH",
               "PEM client certificate for mTLS (with --grader-tls-key-file); turns TLS on");
  command.Flag("grader-tls-key-file", &options->tls_key_file, "PATH",
               "PEM private key of --grader-tls-cert-file");
}

}  // namespace hb::cli
