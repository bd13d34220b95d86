// Transport security shared by every server and client of the project: TLS and mTLS
// credentials from PEM files, bearer tokens on gRPC calls, and the listen policy that keeps a
// server from serving an unauthenticated port beyond this machine.
//
// Servers (hb-grader, hb-env):
//   HB_RETURN_IF_ERROR(CheckListenPolicy(address, security));
//   HB_ASSIGN_OR_RETURN(auto creds, MakeServerCredentials(security));
//   builder.AddListeningPort(address, creds, &port);
//   ... in each RPC handler:  HB status = CheckGrpcCaller(context, tokens);
// Clients (hb-orchestrator, hb-env --grader):
//   HB_ASSIGN_OR_RETURN(auto creds, MakeChannelCredentials(client));
//   ... per call:  AttachCallerToken(client_context, token);
//
// Health checks stay unauthenticated (Kubernetes probes carry no token); the handlers of the
// project's own services check the token. The check runs in the handler rather than in an
// AuthMetadataProcessor because gRPC attaches processors only to TLS credentials, and a token
// must also protect a plaintext loopback or in-cluster port.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/bearer_tokens.h"

// Declared, not included: this header is read by every object that holds a grader connection's
// options, most of which never touch gRPC (the gRPC headers cost ~2 s of compile per object).
// The functions below need the full types only where they are called.
namespace grpc {
class ChannelCredentials;
class ClientContext;
class ServerContextBase;
class ServerCredentials;
}  // namespace grpc

namespace hb {

// How a server authenticates its callers. Plaintext and no token when every field is empty.
struct ServerSecurityOptions {
  // PEM server certificate chain and private key: both or neither (`--tls-cert-file`,
  // `--tls-key-file`).
  std::string tls_cert_file;
  std::string tls_key_file;
  // PEM CA bundle; when set, clients must present a certificate it signed (mTLS,
  // `--tls-client-ca-file`). Requires the server certificate.
  std::string tls_client_ca_file;
  // Accepted bearer tokens (`--auth-token-file`); empty disables token checks.
  BearerTokens tokens;
  // Serve on a non-loopback address with neither a token nor mTLS (`--allow-insecure`).
  bool allow_insecure = false;

  bool tls() const { return !tls_cert_file.empty(); }
};

// kInvalidArgument for an inconsistent set: a certificate without its key or the reverse, a
// client CA without a server certificate.
absl::Status ValidateServerSecurity(const ServerSecurityOptions& options);

// True for 127.0.0.0/8, ::1, "localhost" and unix: addresses. `address` is "host:port",
// "[v6]:port" or a gRPC URI such as "unix:/path".
bool IsLoopbackAddress(absl::string_view address);

// kFailedPrecondition when `address` is reachable from other machines and `options` neither
// checks tokens nor requires client certificates, unless allow_insecure; the message names
// the address and the flags that fix it. Also runs ValidateServerSecurity.
absl::Status CheckListenPolicy(absl::string_view address, const ServerSecurityOptions& options);

// TLS (optionally mTLS) server credentials, or insecure ones when no certificate is set.
// Errors: kNotFound/kPermissionDenied naming an unreadable file; kInvalidArgument for a file
// that is not PEM.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerSecurityOptions& options);

// The caller check of one gRPC call: CheckCallerToken on its `authorization` metadata.
absl::Status CheckGrpcCaller(const grpc::ServerContextBase& context, const BearerTokens& tokens);
// The same check on an `authorization` metadata value already read ("" when absent), for code
// that sees the metadata before a handler does (common/rpc/malformed_request.h).
absl::Status CheckGrpcAuthorization(const BearerTokens& tokens, absl::string_view authorization);

// How a client reaches a server.
struct ClientSecurityOptions {
  // PEM CA bundle that signed the server's certificate; setting it (or a client certificate)
  // turns TLS on (`--grader-tls-ca-file`). Empty with TLS on: the system roots.
  std::string tls_ca_file;
  // PEM client certificate and key for mTLS, both or neither (`--grader-tls-cert-file`,
  // `--grader-tls-key-file`).
  std::string tls_cert_file;
  std::string tls_key_file;
  // File holding the bearer token to send (`--grader-token-file`); the first token line.
  std::string token_file;

  bool tls() const { return !tls_ca_file.empty() || !tls_cert_file.empty(); }
};

// Channel credentials for `options` and the token to attach to each call (empty for none).
struct ClientCredentials {
  std::shared_ptr<grpc::ChannelCredentials> channel;
  std::string token;
};

// Errors: kInvalidArgument for a certificate without its key (or the reverse) or a token file
// with no valid token; the file errors of ReadFile.
absl::StatusOr<ClientCredentials> MakeClientCredentials(const ClientSecurityOptions& options);

// Adds `authorization: Bearer <token>` to `context` (nothing when `token` is empty).
void AttachCallerToken(grpc::ClientContext& context, const std::string& token);

}  // namespace hb
