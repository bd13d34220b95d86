#include "security/bearer_tokens.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/file.h"
#include "common/base/status_macros.h"

namespace hb {
namespace {

absl::Status CheckToken(absl::string_view token, absl::string_view where) {
  if (token.size() < BearerTokens::kMinTokenBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": token is ", token.size(), " bytes; at least ", BearerTokens::kMinTokenBytes,
        " are required (generate one with `openssl rand -hex 32`)"));
  }
  for (unsigned char c : token) {
    if (c <= 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": token holds white space or a control character"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path) {
  HB_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::vector<std::string> tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    HB_RETURN_IF_ERROR(CheckToken(line, absl::StrCat(path, ":", line_number)));
    tokens.emplace_back(line);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no token (one token per line; '#' starts a comment)"));
  }
  return tokens;
}

absl::StatusOr<BearerTokens> BearerTokens::LoadFile(const std::string& path) {
  HB_ASSIGN_OR_RETURN(std::vector<std::string> tokens, ReadTokenFile(path));
  return FromList(tokens, path);
}

absl::StatusOr<BearerTokens> BearerTokens::FromList(const std::vector<std::string>& tokens,
                                                    absl::string_view source) {
  BearerTokens result;
  for (size_t i = 0; i < tokens.size(); ++i) {
    HB_RETURN_IF_ERROR(CheckToken(tokens[i], absl::StrCat(source, " entry ", i + 1)));
    Digest digest;
    SHA256(reinterpret_cast<const unsigned char*>(tokens[i].data()), tokens[i].size(),
           digest.data());
    result.digests_.push_back(digest);
  }
  return result;
}

bool BearerTokens::Accepts(absl::string_view presented) const {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(presented.data()), presented.size(), digest.data());
  // Every digest is compared, match or not, so the time taken says nothing about which.
  int matches = 0;
  for (const Digest& accepted : digests_) {
    matches |= CRYPTO_memcmp(accepted.data(), digest.data(), digest.size()) == 0;
  }
  return matches != 0;
}

std::optional<absl::string_view> BearerFromAuthorization(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return std::nullopt;
  }
  absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

absl::Status CheckCallerToken(const BearerTokens& tokens, absl::string_view authorization,
                              absl::string_view api_key) {
  if (tokens.empty()) return absl::OkStatus();
  if (std::optional<absl::string_view> bearer = BearerFromAuthorization(authorization)) {
    if (tokens.Accepts(*bearer)) return absl::OkStatus();
    return absl::UnauthenticatedError("the bearer token is not accepted by this server");
  }
  if (!api_key.empty()) {
    if (tokens.Accepts(api_key)) return absl::OkStatus();
    return absl::UnauthenticatedError("the X-API-Key is not accepted by this server");
  }
  return absl::UnauthenticatedError(
      "missing credentials: send `authorization: Bearer <token>` (a token from the server's "
      "--auth-token-file)");
}

std::optional<std::string> BasicPasswordFromAuthorization(absl::string_view authorization) {
  constexpr absl::string_view kScheme = "basic ";
  if (authorization.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kScheme.size()), kScheme)) {
    return std::nullopt;
  }
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(authorization.substr(kScheme.size())),
                            &decoded)) {
    return std::nullopt;
  }
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return decoded.substr(colon + 1);
}

absl::Status CheckHttpCallerToken(const BearerTokens& tokens, absl::string_view authorization,
                                  absl::string_view api_key) {
  if (tokens.empty()) return absl::OkStatus();
  if (std::optional<std::string> password = BasicPasswordFromAuthorization(authorization)) {
    if (tokens.Accepts(*password)) return absl::OkStatus();
    return absl::UnauthenticatedError("the Basic auth password is not accepted by this server");
  }
  absl::Status checked = CheckCallerToken(tokens, authorization, api_key);
  if (checked.ok() || !absl::StartsWith(checked.message(), "missing credentials")) return checked;
  return absl::UnauthenticatedError(absl::StrCat(
      checked.message(),
      ", or HTTP Basic auth with the token as password (a URL http://user:<token>@host:port/)"));
}

}  // namespace hb
