// Http1ResponseParser: one HTTP/1.1 response read incrementally, as PlainHttp1Pool
// (plain_http1.h) receives it. Status line and headers (names lowercased, values trimmed,
// obsolete folding joined; at most 64 KiB), then a body framed by Content-Length, chunked
// transfer coding (extensions and trailers ignored) or the end of the connection; 1xx responses
// are skipped; 204 and 304 have no body. The body is capped at `max_body` bytes (a declared
// Content-Length over it fails at once). Where the bytes are split between Feed calls never
// changes the outcome (fuzz/http1_response_fuzzer.cc holds it to that). Not thread-safe.
//
//   Http1ResponseParser parser;
//   parser.Reset(8 << 20);
//   absl::Status s = parser.Feed(data, n);  // again for each read, until done() or an error
//   if (s.ok() && parser.done()) Use(parser.response());
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "http/http_client.h"

namespace hb {

// The error of a response body over `limit` bytes (kFailedPrecondition naming the limit), for
// every HttpClient implementation.
absl::Status BodyOverLimitError(size_t limit);

class Http1ResponseParser {
 public:
  // Starts over for a new response whose body may be at most `max_body` bytes.
  void Reset(size_t max_body) {
    *this = Http1ResponseParser();
    max_body_ = max_body;
  }
  // The response is complete (status, headers and body in response()).
  bool done() const { return state_ == State::kDone; }
  // The connection may carry the next request: HTTP/1.1 without "Connection: close" (1.0 with
  // "keep-alive"), a framed body, and nothing received after the response.
  bool keep_alive() const { return keep_alive_ && !extra_bytes_; }
  // Complete once done(); latency is left to the caller. The body is as received (see
  // content_encoding()).
  HttpResponse& response() { return response_; }
  // The Content-Encoding header, lowercased ("" without one).
  const std::string& content_encoding() const { return content_encoding_; }
  size_t max_body() const { return max_body_; }

  // Takes the next `n` bytes. kUnavailable for a malformed response (status line, header block
  // over 64 KiB, Content-Length, chunk size), kFailedPrecondition (BodyOverLimitError) for a
  // body over max_body; after an error the parser must be Reset. Bytes after a complete
  // response are dropped and make keep_alive() false.
  absl::Status Feed(const char* p, size_t n);
  // The connection ended: completes a body framed by the end of the connection; kUnavailable
  // for a response cut short ("Empty reply from server" when `anything_received` is false).
  absl::Status Eof(bool anything_received);

 private:
  enum class State {
    kHead,
    kFixed,
    kUntilClose,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailer,
    kDone
  };
  absl::Status ParseHead(absl::string_view head);
  absl::Status Body(const char* p, size_t n);
  // Appends to line_ up to a '\n'; the number of bytes taken and whether the line ended.
  absl::StatusOr<std::pair<size_t, bool>> Line(const char* p, size_t n);

  State state_ = State::kHead;
  HttpResponse response_;
  std::string head_;
  std::string line_;
  std::string content_encoding_;
  size_t remaining_ = 0;
  size_t max_body_ = 0;
  bool keep_alive_ = true;
  bool extra_bytes_ = false;
};

}  // namespace hb
