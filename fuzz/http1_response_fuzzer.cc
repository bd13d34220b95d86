// Http1ResponseParser on untrusted bytes, the answer of a hostile or broken upstream: never a
// crash, a body never over its limit, and the same outcome whether the bytes come at once or
// in pieces (the first byte sets the body limit, the second the piece size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "http/http1_response_parser.h"

namespace {

struct Outcome {
  absl::Status status;
  bool done = false;
  bool keep_alive = false;
  hb::HttpResponse response;
};

Outcome Parse(const char* data, size_t size, size_t piece, size_t max_body) {
  hb::Http1ResponseParser parser;
  parser.Reset(max_body);
  Outcome out;
  for (size_t at = 0; at < size && out.status.ok() && !parser.done(); at += piece) {
    const size_t n = size - at < piece ? size - at : piece;
    out.status = parser.Feed(data + at, n);
  }
  if (out.status.ok() && !parser.done()) out.status = parser.Eof(size > 0);
  out.done = out.status.ok() && parser.done();
  out.keep_alive = parser.keep_alive();
  out.response = parser.response();
  if (out.response.body.size() > max_body) std::abort();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_body = static_cast<size_t>(data[0]) * 64;
  const size_t piece = static_cast<size_t>(data[1]) + 1;
  const char* bytes = reinterpret_cast<const char*>(data + 2);
  size -= 2;
  const Outcome whole = Parse(bytes, size, size == 0 ? 1 : size, max_body);
  const Outcome pieces = Parse(bytes, size, piece, max_body);
  if (whole.status.code() != pieces.status.code() || whole.done != pieces.done) std::abort();
  if (whole.done && (whole.response.status_code != pieces.response.status_code ||
                     whole.response.headers != pieces.response.headers ||
                     whole.response.body != pieces.response.body)) {
    std::abort();
  }
  return 0;
}
