#include "security/bearer_tokens.h"

#include <fstream>
#include <string>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kTokenA[] = "0123456789abcdef0123456789abcdef";
constexpr char kTokenB[] = "fedcba9876543210fedcba9876543210";

std::string WriteTemp(const std::string& contents) {
  std::string path = ::hb::testing::MakeTempDir() + "/tokens";
  std::ofstream(path) << contents;
  return path;
}

TEST(BearerTokensTest, LoadsEveryTokenAndSkipsCommentsAndBlankLines) {
  std::string path = WriteTemp(std::string("# rotation\n\n  ") + kTokenA + "  \n" + kTokenB + "\n");
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::LoadFile(path));
  EXPECT_EQ(tokens.size(), 2u);
  EXPECT_TRUE(tokens.Accepts(kTokenA));
  EXPECT_TRUE(tokens.Accepts(kTokenB));
}

TEST(BearerTokensTest, AcceptsOnlyTheExactToken) {
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::FromList({kTokenA}));
  EXPECT_FALSE(tokens.Accepts(""));
  EXPECT_FALSE(tokens.Accepts(std::string(kTokenA).substr(0, 31)));
  EXPECT_FALSE(tokens.Accepts(std::string(kTokenA) + "0"));
  EXPECT_FALSE(tokens.Accepts(kTokenB));
}

TEST(BearerTokensTest, RejectsAFileWithoutTokens) {
  std::string path = WriteTemp("# nothing here\n\n");
  EXPECT_THAT(BearerTokens::LoadFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path + ": no token")));
}

TEST(BearerTokensTest, RejectsAShortTokenNamingTheLine) {
  std::string path = WriteTemp(std::string(kTokenA) + "\nshort\n");
  EXPECT_THAT(BearerTokens::LoadFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(path + ":2: token is 5 bytes; at least 16 are required")));
}

TEST(BearerTokensTest, RejectsATokenWithInnerWhiteSpace) {
  EXPECT_THAT(BearerTokens::FromList({"0123456789 abcdef0123"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("white space")));
}

TEST(BearerTokensTest, MissingFileIsNotFound) {
  EXPECT_THAT(BearerTokens::LoadFile("/nonexistent/tokens"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/tokens")));
}

TEST(BearerFromAuthorizationTest, ReadsTheBearerScheme) {
  EXPECT_EQ(BearerFromAuthorization("Bearer abc"), "abc");
  EXPECT_EQ(BearerFromAuthorization("bearer  abc "), "abc");
  EXPECT_EQ(BearerFromAuthorization("Basic abc"), std::nullopt);
  EXPECT_EQ(BearerFromAuthorization("Bearer "), std::nullopt);
  EXPECT_EQ(BearerFromAuthorization(""), std::nullopt);
}

TEST(CheckCallerTokenTest, OpenWhenNoTokensAreConfigured) {
  EXPECT_TRUE(CheckCallerToken(BearerTokens(), "", "").ok());
}

TEST(CheckCallerTokenTest, AcceptsBearerOrApiKey) {
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::FromList({kTokenA}));
  EXPECT_TRUE(CheckCallerToken(tokens, std::string("Bearer ") + kTokenA, "").ok());
  EXPECT_TRUE(CheckCallerToken(tokens, "", kTokenA).ok());
}

TEST(CheckCallerTokenTest, RefusesMissingOrWrongCredentialsWithoutEchoingThem) {
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::FromList({kTokenA}));
  EXPECT_THAT(CheckCallerToken(tokens, "", ""),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("missing credentials: send `authorization: Bearer <token>`")));
  absl::Status wrong = CheckCallerToken(tokens, std::string("Bearer ") + kTokenB, "");
  EXPECT_THAT(wrong, StatusIs(absl::StatusCode::kUnauthenticated,
                              HasSubstr("bearer token is not accepted")));
  EXPECT_THAT(std::string(wrong.message()), ::testing::Not(HasSubstr(kTokenB)));
  EXPECT_THAT(CheckCallerToken(tokens, "", kTokenB),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("X-API-Key is not accepted")));
}

TEST(BasicPasswordFromAuthorizationTest, ReadsThePasswordOfTheBasicScheme) {
  // base64("hb:secret-token") and base64("user:pa:ss"): the password is after the first ':'.
  EXPECT_EQ(BasicPasswordFromAuthorization("Basic aGI6c2VjcmV0LXRva2Vu"), "secret-token");
  EXPECT_EQ(BasicPasswordFromAuthorization("basic  dXNlcjpwYTpzcw== "), "pa:ss");
  EXPECT_EQ(BasicPasswordFromAuthorization("Basic bm9jb2xvbg=="), std::nullopt);  // "nocolon"
  EXPECT_EQ(BasicPasswordFromAuthorization("Basic !!!"), std::nullopt);
  EXPECT_EQ(BasicPasswordFromAuthorization("Bearer aGI6c2VjcmV0LXRva2Vu"), std::nullopt);
  EXPECT_EQ(BasicPasswordFromAuthorization(""), std::nullopt);
}

std::string Basic(const std::string& user, const std::string& password) {
  return "Basic " + absl::Base64Escape(user + ":" + password);
}

TEST(CheckHttpCallerTokenTest, AcceptsBasicAuthWhosePasswordIsATokenBesideBearerAndApiKey) {
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::FromList({kTokenA}));
  EXPECT_TRUE(CheckHttpCallerToken(tokens, Basic("hb", kTokenA), "").ok());
  EXPECT_TRUE(CheckHttpCallerToken(tokens, Basic("", kTokenA), "").ok());
  EXPECT_TRUE(CheckHttpCallerToken(tokens, std::string("Bearer ") + kTokenA, "").ok());
  EXPECT_TRUE(CheckHttpCallerToken(tokens, "", kTokenA).ok());
  EXPECT_TRUE(CheckHttpCallerToken(BearerTokens(), "", "").ok());
}

TEST(CheckHttpCallerTokenTest, RefusesAWrongPasswordOrNoneNamingTheBasicForm) {
  HB_ASSERT_OK_AND_ASSIGN(BearerTokens tokens, BearerTokens::FromList({kTokenA}));
  // The token as user name is not a password.
  EXPECT_THAT(CheckHttpCallerToken(tokens, Basic(kTokenA, kTokenB), ""),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       "the Basic auth password is not accepted by this server"));
  EXPECT_THAT(CheckHttpCallerToken(tokens, "", ""),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("or HTTP Basic auth with the token as password (a URL "
                                 "http://user:<token>@host:port/)")));
  EXPECT_THAT(CheckHttpCallerToken(tokens, std::string("Bearer ") + kTokenB, ""),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       "the bearer token is not accepted by this server"));
}

}  // namespace
}  // namespace hb
