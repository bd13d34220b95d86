#include "security/transport_security.h"

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file.h"
#include "common/base/host_port.h"
#include "common/base/status_macros.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"

namespace hb {
namespace {

// The host part of "host:port", "[v6]:port", "ipv4:host:port" or "dns:///host:port".
absl::string_view HostOf(absl::string_view address) {
  for (absl::string_view scheme : {"dns:///", "ipv4:", "ipv6:"}) {
    absl::ConsumePrefix(&address, scheme);
  }
  return BareHostOf(address);
}

absl::StatusOr<std::string> ReadPem(const std::string& path, absl::string_view what) {
  HB_ASSIGN_OR_RETURN(std::string pem, ReadFile(path));
  if (!absl::StrContains(pem, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a PEM file (", what, " expected, '-----BEGIN ...' missing)"));
  }
  return pem;
}

absl::Status CheckPair(absl::string_view cert, absl::string_view key, absl::string_view flag) {
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "-cert-file and ", flag, "-key-file go together: set both or neither"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateServerSecurity(const ServerSecurityOptions& options) {
  HB_RETURN_IF_ERROR(CheckPair(options.tls_cert_file, options.tls_key_file, "--tls"));
  if (!options.tls_client_ca_file.empty() && !options.tls()) {
    return absl::InvalidArgumentError(
        "--tls-client-ca-file needs --tls-cert-file and --tls-key-file (mTLS runs over TLS)");
  }
  return absl::OkStatus();
}

bool IsLoopbackAddress(absl::string_view address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return true;
  }
  absl::string_view host = HostOf(address);
  if (host == "localhost") return true;
  std::string host_string(host);
  in_addr v4;
  if (inet_pton(AF_INET, host_string.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, host_string.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

absl::Status CheckListenPolicy(absl::string_view address, const ServerSecurityOptions& options) {
  HB_RETURN_IF_ERROR(ValidateServerSecurity(options));
  const bool authenticated = !options.tokens.empty() || !options.tls_client_ca_file.empty();
  if (authenticated || options.allow_insecure || IsLoopbackAddress(address)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to serve ", address,
      " without authentication: any host that reaches it could use this server. Pass "
      "--auth-token-file (bearer tokens) or --tls-client-ca-file (mTLS), listen on 127.0.0.1, "
      "or pass --allow-insecure when a network policy already restricts callers"));
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerSecurityOptions& options) {
  HB_RETURN_IF_ERROR(ValidateServerSecurity(options));
  if (!options.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  HB_ASSIGN_OR_RETURN(pair.cert_chain, ReadPem(options.tls_cert_file, "a certificate"));
  HB_ASSIGN_OR_RETURN(pair.private_key, ReadPem(options.tls_key_file, "a private key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!options.tls_client_ca_file.empty()) {
    HB_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.tls_client_ca_file, "a CA bundle"));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

absl::Status CheckGrpcCaller(const grpc::ServerContextBase& context, const BearerTokens& tokens) {
  if (tokens.empty()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  absl::string_view authorization;
  if (it != metadata.end()) authorization = absl::string_view(it->second.data(), it->second.size());
  return CheckGrpcAuthorization(tokens, authorization);
}

absl::Status CheckGrpcAuthorization(const BearerTokens& tokens, absl::string_view authorization) {
  return CheckCallerToken(tokens, authorization, "");
}

absl::StatusOr<ClientCredentials> MakeClientCredentials(const ClientSecurityOptions& options) {
  HB_RETURN_IF_ERROR(CheckPair(options.tls_cert_file, options.tls_key_file, "--grader-tls"));
  ClientCredentials result;
  if (!options.token_file.empty()) {
    HB_ASSIGN_OR_RETURN(std::vector<std::string> tokens, ReadTokenFile(options.token_file));
    result.token = tokens.front();
  }
  if (!options.tls()) {
    result.channel = grpc::InsecureChannelCredentials();
    return result;
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    HB_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.tls_ca_file, "a CA bundle"));
  }
  if (!options.tls_cert_file.empty()) {
    HB_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(options.tls_cert_file, "a certificate"));
    HB_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(options.tls_key_file, "a private key"));
  }
  result.channel = grpc::SslCredentials(ssl);
  return result;
}

void AttachCallerToken(grpc::ClientContext& context, const std::string& token) {
  if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
}

}  // namespace hb
