#include "http/http1_response_parser.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hb {
namespace {

constexpr size_t kMaxHeadBytes = 64 << 10;
constexpr size_t kMaxLineBytes = 1024;
constexpr size_t kMaxReserveBytes = 64 << 10;

}  // namespace

absl::Status BodyOverLimitError(size_t limit) {
  return absl::FailedPreconditionError(
      absl::StrCat("HTTP transport: response body over the ", limit,
                   "-byte limit (max_response_body_bytes); not read further"));
}

absl::Status Http1ResponseParser::Feed(const char* p, size_t n) {
  std::string carry;  // bytes after a skipped 1xx head
  while (n > 0) {
    switch (state_) {
      case State::kHead: {
        const size_t scan_from = head_.size() < 3 ? 0 : head_.size() - 3;
        head_.append(p, n);
        n = 0;
        const size_t end = head_.find("\r\n\r\n", scan_from);
        // Judged on where the head ends (or, before that is known, where it could end at the
        // earliest), so that where the bytes were split never matters.
        const size_t head_end = end != std::string::npos ? end
                                : head_.size() < 3       ? 0
                                                         : head_.size() - 3;
        if (head_end > kMaxHeadBytes) {
          return absl::UnavailableError("HTTP transport: response headers over 64 KiB");
        }
        if (end == std::string::npos) break;
        carry = head_.substr(end + 4);
        head_.resize(end);
        if (absl::Status s = ParseHead(head_); !s.ok()) return s;
        head_.clear();
        p = carry.data();
        n = carry.size();
        break;
      }
      case State::kFixed:
      case State::kChunkData: {
        const size_t take = std::min(n, remaining_);
        if (absl::Status s = Body(p, take); !s.ok()) return s;
        p += take, n -= take, remaining_ -= take;
        if (remaining_ == 0) state_ = state_ == State::kFixed ? State::kDone : State::kChunkEnd;
        break;
      }
      case State::kUntilClose:
        if (absl::Status s = Body(p, n); !s.ok()) return s;
        n = 0;
        break;
      case State::kChunkSize:
      case State::kChunkEnd:
      case State::kTrailer: {
        absl::StatusOr<std::pair<size_t, bool>> taken = Line(p, n);
        if (!taken.ok()) return taken.status();
        p += taken->first, n -= taken->first;
        if (!taken->second) break;
        absl::string_view line = absl::StripAsciiWhitespace(line_);
        if (state_ == State::kChunkEnd) {
          state_ = State::kChunkSize;
        } else if (state_ == State::kTrailer) {
          if (line.empty()) state_ = State::kDone;
        } else {
          line = line.substr(0, line.find(';'));
          uint64_t size = 0;
          if (!absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &size)) {
            return absl::UnavailableError("HTTP transport: malformed chunk size");
          }
          remaining_ = size;
          state_ = size == 0 ? State::kTrailer : State::kChunkData;
        }
        line_.clear();
        break;
      }
      case State::kDone:
        extra_bytes_ = true;  // the server sent more than one answer: do not reuse
        n = 0;
        break;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::pair<size_t, bool>> Http1ResponseParser::Line(const char* p, size_t n) {
  const char* newline = static_cast<const char*>(std::memchr(p, '\n', n));
  const size_t take = newline == nullptr ? n : static_cast<size_t>(newline - p) + 1;
  line_.append(p, take);
  if (line_.size() > kMaxLineBytes) {
    return absl::UnavailableError("HTTP transport: malformed chunked body");
  }
  return std::make_pair(take, newline != nullptr);
}

absl::Status Http1ResponseParser::Body(const char* p, size_t n) {
  if (response_.body.size() + n > max_body_) return BodyOverLimitError(max_body_);
  response_.body.append(p, n);
  return absl::OkStatus();
}

absl::Status Http1ResponseParser::ParseHead(absl::string_view head) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, '\n');
  absl::string_view status_line = absl::StripTrailingAsciiWhitespace(lines[0]);
  int status = 0;
  if (!absl::ConsumePrefix(&status_line, "HTTP/1.") || status_line.size() < 5 ||
      status_line[1] != ' ' || !absl::SimpleAtoi(status_line.substr(2, 3), &status) ||
      status < 100 || status > 999) {
    return absl::UnavailableError("HTTP transport: malformed response status line");
  }
  const bool http10 = status_line[0] == '0';
  response_.headers.clear();
  for (size_t i = 1; i < lines.size(); ++i) {
    absl::string_view line = absl::StripTrailingAsciiWhitespace(lines[i]);
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t') && !response_.headers.empty()) {
      absl::StrAppend(&response_.headers.back().second, " ", absl::StripAsciiWhitespace(line));
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    response_.headers.emplace_back(
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon))),
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1))));
  }
  if (status < 200) return absl::OkStatus();  // 1xx: the real answer follows
  response_.status_code = status;
  const std::string* connection = response_.Header("connection");
  const std::string lower_connection =
      connection == nullptr ? "" : absl::AsciiStrToLower(*connection);
  keep_alive_ = http10 ? absl::StrContains(lower_connection, "keep-alive")
                       : !absl::StrContains(lower_connection, "close");
  if (const std::string* encoding = response_.Header("content-encoding")) {
    content_encoding_ = absl::AsciiStrToLower(*encoding);
  }
  const std::string* chunked = response_.Header("transfer-encoding");
  const std::string* length = response_.Header("content-length");
  if (status == 204 || status == 304) {
    state_ = State::kDone;
  } else if (chunked != nullptr && absl::EndsWithIgnoreCase(*chunked, "chunked")) {
    state_ = State::kChunkSize;
  } else if (length != nullptr) {
    uint64_t bytes = 0;
    if (!absl::SimpleAtoi(*length, &bytes)) {
      return absl::UnavailableError("HTTP transport: malformed Content-Length");
    }
    if (bytes > max_body_) return BodyOverLimitError(max_body_);
    remaining_ = bytes;
    // A declared length is not trusted with memory: the body grows as it arrives.
    response_.body.reserve(std::min<uint64_t>(bytes, kMaxReserveBytes));
    state_ = bytes == 0 ? State::kDone : State::kFixed;
  } else {
    state_ = State::kUntilClose;
    keep_alive_ = false;
  }
  return absl::OkStatus();
}

absl::Status Http1ResponseParser::Eof(bool anything_received) {
  if (state_ == State::kUntilClose) state_ = State::kDone;
  if (state_ == State::kDone) return absl::OkStatus();
  return absl::UnavailableError(anything_received
                                    ? "HTTP transport: connection closed before the response ended"
                                    : "HTTP transport: Empty reply from server");
}

}  // namespace hb
