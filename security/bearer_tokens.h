// BearerTokens: the shared secrets a server accepts from its callers (`--auth-token-file`), and
// how a presented credential is read from gRPC metadata or HTTP headers.
//
// A token file holds one token per line; blank lines and lines starting with '#' are ignored,
// surrounding white space is trimmed. Several tokens let an operator rotate one without
// downtime. Tokens are compared in constant time (their SHA-256 digests, every accepted token
// every time), so neither the match position nor a token's length leaks through timing.
//
//   HB_ASSIGN_OR_RETURN(BearerTokens tokens, BearerTokens::LoadFile(path));
//   if (!tokens.Accepts(presented)) return absl::UnauthenticatedError(...);
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hb {

class BearerTokens {
 public:
  // No tokens: Accepts() is always false, empty() is true.
  BearerTokens() = default;

  // kNotFound when the file cannot be read; kInvalidArgument (naming the file and line) for a
  // file with no token, a token shorter than kMinTokenBytes or holding white space or control
  // characters.
  static absl::StatusOr<BearerTokens> LoadFile(const std::string& path);

  // The same checks as LoadFile over an in-memory list (`source` names it in messages).
  static absl::StatusOr<BearerTokens> FromList(const std::vector<std::string>& tokens,
                                               absl::string_view source = "token list");

  // Shortest token accepted: 16 bytes (a guessable secret is no secret).
  static constexpr size_t kMinTokenBytes = 16;

  bool empty() const { return digests_.empty(); }
  size_t size() const { return digests_.size(); }

  // True when `presented` equals one of the tokens. Constant time in the tokens' contents.
  // Thread-safe (const).
  bool Accepts(absl::string_view presented) const;

 private:
  using Digest = std::array<unsigned char, 32>;
  std::vector<Digest> digests_;
};

// The tokens of a token file, in file order, each checked as LoadFile checks them (a client
// sends the first). Same errors as LoadFile.
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

// The token of an `Authorization: Bearer <token>` value (scheme case-insensitive, one or more
// spaces), or std::nullopt for any other value.
std::optional<absl::string_view> BearerFromAuthorization(absl::string_view authorization);

// The single check every transport makes. `authorization` is the Authorization header (or the
// gRPC `authorization` metadata), `api_key` the X-API-Key header (HTTP only; empty when
// absent). OK when `tokens` is empty (auth disabled) or either credential is accepted;
// otherwise kUnauthenticated with a message that says which header to send (never echoing what
// was presented).
absl::Status CheckCallerToken(const BearerTokens& tokens, absl::string_view authorization,
                              absl::string_view api_key);

// The password of an `Authorization: Basic base64(user:password)` value (scheme
// case-insensitive), or std::nullopt for any other value or one that is not valid base64 with a
// ':'. The user name is ignored.
std::optional<std::string> BasicPasswordFromAuthorization(absl::string_view authorization);

// CheckCallerToken for HTTP servers, which also accept HTTP Basic auth whose password is a
// token: trainers whose HTTP client cannot set a header (OpenRLHF, slime and NeMo-Gym post with
// aiohttp) send one when the URL carries it, http://user:TOKEN@host:port/. Same constant-time
// check; a wrong password is kUnauthenticated "the Basic auth password is not accepted by this
// server"; without credentials, the message also names the Basic form.
absl::Status CheckHttpCallerToken(const BearerTokens& tokens, absl::string_view authorization,
                                  absl::string_view api_key);

}  // namespace hb
