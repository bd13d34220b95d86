// Http1ResponseParser: framing, keep-alive rules, limits, and the same outcome however the bytes
// are split (every canned answer is also fed one byte at a time).
#include "http/http1_response_parser.h"

#include <algorithm>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

struct Parsed {
  absl::Status status;
  bool done = false;
  bool keep_alive = false;
  HttpResponse response;
};

// Feeds `bytes` in pieces of `piece` bytes, then the end of the connection when `eof`.
Parsed Parse(const std::string& bytes, size_t piece, bool eof = false, size_t max_body = 1000) {
  Http1ResponseParser parser;
  parser.Reset(max_body);
  Parsed out;
  for (size_t at = 0; at < bytes.size() && out.status.ok(); at += piece) {
    out.status = parser.Feed(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  if (out.status.ok() && eof) out.status = parser.Eof(!bytes.empty());
  out.done = parser.done();
  out.keep_alive = parser.keep_alive();
  out.response = parser.response();
  return out;
}

// Parses whole and byte by byte; both must agree (on the response too when it is complete).
Parsed ParseBothWays(const std::string& bytes, bool eof = false, size_t max_body = 1000) {
  Parsed whole = Parse(bytes, bytes.size() + 1, eof, max_body);
  Parsed bytewise = Parse(bytes, 1, eof, max_body);
  EXPECT_EQ(whole.status, bytewise.status);
  EXPECT_EQ(whole.done, bytewise.done);
  if (whole.done) {  // after an error the partial response means nothing
    EXPECT_EQ(whole.keep_alive, bytewise.keep_alive);
    EXPECT_EQ(whole.response.status_code, bytewise.response.status_code);
    EXPECT_EQ(whole.response.headers, bytewise.response.headers);
    EXPECT_EQ(whole.response.body, bytewise.response.body);
  }
  return whole;
}

TEST(Http1ResponseParserTest, ContentLengthBodyAndKeepAlive) {
  Parsed p = ParseBothWays("HTTP/1.1 200 OK\r\nX-A:  b \r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_TRUE(p.done);
  EXPECT_TRUE(p.keep_alive);
  EXPECT_EQ(p.response.status_code, 200);
  EXPECT_EQ(p.response.body, "hello");
  ASSERT_NE(p.response.Header("x-a"), nullptr);
  EXPECT_EQ(*p.response.Header("x-a"), "b");
}

TEST(Http1ResponseParserTest, ChunkedWithExtensionsAndTrailers) {
  Parsed p = ParseBothWays(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n");
  ASSERT_TRUE(p.done) << p.status;
  EXPECT_EQ(p.response.body, "abc0123456789");
  EXPECT_TRUE(p.keep_alive);
}

TEST(Http1ResponseParserTest, InformationalResponsesAreSkipped) {
  Parsed p = ParseBothWays(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
      "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  ASSERT_TRUE(p.done) << p.status;
  EXPECT_EQ(p.response.status_code, 201);
  EXPECT_EQ(p.response.Header("link"), nullptr);
}

TEST(Http1ResponseParserTest, KeepAliveRules) {
  EXPECT_FALSE(ParseBothWays("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                   .keep_alive);
  EXPECT_FALSE(ParseBothWays("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keep_alive);
  EXPECT_TRUE(
      ParseBothWays("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")
          .keep_alive);
  // Bytes after the answer: the connection is not reused.
  Parsed extra = Parse("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200", 1000);
  EXPECT_TRUE(extra.done);
  EXPECT_FALSE(extra.keep_alive);
}

TEST(Http1ResponseParserTest, ABodyWithoutFramingEndsWithTheConnection) {
  Parsed open = ParseBothWays("HTTP/1.1 200 OK\r\n\r\npartial");
  EXPECT_FALSE(open.done);
  Parsed closed = ParseBothWays("HTTP/1.1 200 OK\r\n\r\nall of it", /*eof=*/true);
  ASSERT_TRUE(closed.done) << closed.status;
  EXPECT_EQ(closed.response.body, "all of it");
  EXPECT_FALSE(closed.keep_alive);
}

TEST(Http1ResponseParserTest, ErrorsAreTheSameHoweverTheBytesAreSplit) {
  EXPECT_THAT(ParseBothWays("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true).status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("before the response ended")));
  EXPECT_THAT(ParseBothWays("", true).status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Empty reply")));
  EXPECT_THAT(ParseBothWays("HTTP/2 200\r\n\r\n").status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("status line")));
  EXPECT_THAT(ParseBothWays("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("Content-Length")));
  EXPECT_THAT(ParseBothWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").status,
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("chunk size")));
  EXPECT_THAT(ParseBothWays(
                  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n",
                  false, 8)
                  .status,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("8-byte limit")));
  EXPECT_THAT(ParseBothWays("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", false, 8).status,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("8-byte limit")));
}

// The header block may be 64 KiB; the limit does not depend on how the bytes arrive.
TEST(Http1ResponseParserTest, TheHeaderLimitIsWhereTheHeadEnds) {
  const std::string start = "HTTP/1.1 200 OK\r\nX-Pad: ";
  const std::string end = "\r\nContent-Length: 0\r\n\r\n";
  // The terminating CRLFCRLF starts at 65,536 (allowed) or 65,537 (not).
  const size_t fits = (64 << 10) - start.size() - (end.size() - 4);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    Parsed ok = Parse(start + std::string(fits, 'p') + end, piece);
    EXPECT_TRUE(ok.done) << piece << ": " << ok.status;
    Parsed over = Parse(start + std::string(fits + 1, 'p') + end, piece);
    EXPECT_THAT(over.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("64 KiB")))
        << piece;
  }
}

}  // namespace
}  // namespace hb
