// The HTTP request path of hb-env's listener, without sockets: the bytes a client sends, cut
// into reads at sizes the input chooses, through HttpRequestFramer (the framing BoundedEvhttp
// does while reading, http/bounded_evhttp.h) with small limits so that every refusal is
// reachable; then each complete request through the same route table hb-env serves
// (OrsRoutes::Register, environment/http/ors_routes.h: the ORS and trainer rows and the token
// gate), with its sessions kept across the input's requests; and the SSE chunking of a payload
// (ors_wire.h).
//
// Input: byte 0 picks the read size (1 to 64 bytes), byte 1 the SSE chunk size (8 to 71); the
// rest is the client's byte stream (any number of pipelined requests).
//
// Beyond memory errors (ASan/UBSan), it aborts when an invariant of the framer breaks: it
// consumes more than it was given, buffers a head over max_header_bytes, hands on a head over
// that limit or one that does not end with a blank line, stalls (consumes nothing, refuses
// nothing), refuses with a status outside
// 400/411/413/414/431, passes more body bytes than the Content-Length it accepted; when a route
// answers twice or with a status outside 200..599; or when SseChunks loses, adds or oversizes
// bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/base/clock.h"
#include "environment/environment.h"
#include "environment/http/ors_routes.h"
#include "environment/http/trainer_routes.h"
#include "environment/ors/ors_wire.h"
#include "http/bounded_evhttp.h"
#include "http/http_server.h"
#include "tests/testing/recording_http_exchange.h"

namespace {

#define FUZZ_CHECK(condition)                                                                \
  do {                                                                                       \
    if (!(condition)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)

// One split "dev" of two tasks; grading is never reached (no route here submits).
class TwoTaskEnvironment final : public hb::env::Environment {
 public:
  std::vector<hb::env::SplitInfo> ListSplits() const override { return {{"dev", 2}}; }
  absl::StatusOr<std::vector<hb::env::TaskSummary>> ListTasks(absl::string_view split,
                                                              int64_t start,
                                                              int64_t stop) const override {
    if (split != "dev") return absl::NotFoundError("unknown split");
    if (start < 0 || start > stop) return absl::InvalidArgumentError("bad range");
    std::vector<hb::env::TaskSummary> tasks;
    for (int64_t i = start; i < stop && i < 2; ++i) tasks.push_back(Task(i).task);
    return tasks;
  }
  absl::StatusOr<hb::env::TaskPrompt> GetTask(const hb::env::TaskRef& ref) const override {
    if (ref.index.has_value() == !ref.task_id.empty()) {
      return absl::InvalidArgumentError("one form");
    }
    if (ref.index.has_value()) {
      if (ref.split != "dev") return absl::NotFoundError("unknown split");
      if (*ref.index < 0 || *ref.index >= 2) return absl::OutOfRangeError("outside");
      return Task(*ref.index);
    }
    if (ref.task_id == "p0") return Task(0);
    if (ref.task_id == "p1") return Task(1);
    return absl::NotFoundError("unknown task");
  }
  void Submit(const hb::env::TaskRef&, std::string, absl::Time, SubmitCallback done) override {
    done(absl::UnavailableError("not graded here"));
  }

 private:
  static hb::env::TaskPrompt Task(int64_t index) {
    hb::env::TaskPrompt prompt;
    prompt.task.task_id = index == 0 ? "p0" : "p1";
    prompt.task.split = "dev";
    prompt.task.index = index;
    prompt.task.tags = {"theme:x"};
    prompt.prompt_text = "user: hi";
    return prompt;
  }
};

hb::HttpServerLimits SmallLimits() {
  hb::HttpServerLimits limits;
  limits.max_request_line_bytes = 256;
  limits.max_header_bytes = 1024;
  limits.max_header_count = 8;
  limits.max_body_bytes = 4096;
  return limits;
}

// hb-env's routes over `env` as its listener builds them, on a fixed clock, answering on the
// calling thread (the fuzzer's "loop": a Submit refused inline is answered inline).
class HbEnvRoutes {
 public:
  HbEnvRoutes(hb::env::Environment& env, size_t sse_chunk_bytes)
      : trainer_(env, {}, nullptr, inbox_), routes_(env, clock_, Options(sse_chunk_bytes), inbox_) {
    {
      absl::MutexLock lock(&inbox_->mu);
      inbox_->loop_thread = std::this_thread::get_id();
    }
    routes_.Register(&table_, &trainer_);
  }
  const hb::HttpRouteTable& table() const { return table_; }

 private:
  class FixedClock final : public hb::Clock {
   public:
    absl::Time Now() const override { return absl::FromUnixSeconds(1767225600); }
  };
  static hb::env::OrsServerOptions Options(size_t sse_chunk_bytes) {
    hb::env::OrsServerOptions options;
    options.sse_chunk_bytes = sse_chunk_bytes;
    return options;
  }

  FixedClock clock_;
  std::shared_ptr<hb::env::LoopInbox> inbox_ = std::make_shared<hb::env::LoopInbox>();
  hb::env::TrainerRoutes trainer_;
  hb::env::OrsRoutes routes_;
  hb::HttpRouteTable table_;
};

// A complete request (its head parsed as evhttp would hand it on) through hb-env's route table,
// and the SSE framing of its body as a payload.
void Serve(const hb::HttpRouteTable& table, absl::string_view head, absl::string_view body,
           size_t sse_chunk_bytes) {
  const std::vector<absl::string_view> lines = absl::StrSplit(head, '\n');
  const std::vector<absl::string_view> request_line =
      absl::StrSplit(absl::StripSuffix(lines[0], "\r"), ' ');
  hb::HttpServerRequest request;
  request.method = request_line[0];
  const absl::string_view target = request_line.size() > 1 ? request_line[1] : "";
  request.path = target.substr(0, target.find('?'));
  if (request.path.empty()) request.path = "/";
  request.body = body;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = absl::StripSuffix(lines[i], "\r");
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    request.headers.emplace_back(absl::StripAsciiWhitespace(line.substr(0, colon)),
                                 absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  hb::testing::RecordingHttpExchange exchange;
  table.Dispatch(request, exchange);
  // A graded trainer route answers later, through the loop this fuzzer does not run: none.
  FUZZ_CHECK(exchange.replies().size() <= 1);
  for (const hb::testing::RecordedHttpReply& reply : exchange.replies()) {
    FUZZ_CHECK(reply.status >= 200 && reply.status <= 599);
  }
  const std::vector<absl::string_view> pieces = hb::env::SseChunks(body, sse_chunk_bytes);
  FUZZ_CHECK(!pieces.empty());
  FUZZ_CHECK(absl::StrJoin(pieces, "") == body);
  for (size_t i = 0; i < pieces.size(); ++i) {
    FUZZ_CHECK(pieces[i].size() <= sse_chunk_bytes);
    FUZZ_CHECK(i + 1 == pieces.size() || !pieces[i].empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TwoTaskEnvironment* env = new TwoTaskEnvironment();
  static const hb::HttpServerLimits limits = SmallLimits();
  if (size < 2) return 0;
  const size_t read_size = 1 + data[0] % 64;
  const size_t sse_chunk_bytes = 8 + data[1] % 64;
  absl::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  // Fresh per input, so that an input replays alone: its sessions are its own.
  const HbEnvRoutes routes(*env, sse_chunk_bytes);

  hb::HttpRequestFramer framer(limits);
  std::string head;
  std::string body;
  size_t body_expected = 0;
  while (!stream.empty() && framer.phase() != hb::HttpRequestFramer::Phase::kRejected) {
    absl::string_view read = stream.substr(0, read_size);
    stream.remove_prefix(read.size());
    while (!read.empty() && framer.phase() != hb::HttpRequestFramer::Phase::kRejected) {
      if (framer.phase() == hb::HttpRequestFramer::Phase::kBody) {
        const size_t n = std::min(read.size(), framer.body_left());
        body.append(read.data(), n);
        read.remove_prefix(n);
        framer.ConsumeBody(n);
      } else {
        const size_t n = framer.ConsumeHead(read);
        FUZZ_CHECK(n <= read.size());
        FUZZ_CHECK(framer.buffered() <= limits.max_header_bytes);
        read.remove_prefix(n);
        if (framer.head_ready()) {
          head = framer.TakeHead();
          FUZZ_CHECK(head.size() <= limits.max_header_bytes);
          FUZZ_CHECK(absl::EndsWith(head, "\n\n") || absl::EndsWith(head, "\n\r\n"));
          body.clear();
          body_expected =
              framer.phase() == hb::HttpRequestFramer::Phase::kBody ? framer.body_left() : 0;
          FUZZ_CHECK(body_expected <= limits.max_body_bytes);
        } else if (n == 0) {
          // Nothing consumed without a head or a refusal: the framer would stall.
          FUZZ_CHECK(framer.phase() == hb::HttpRequestFramer::Phase::kRejected);
        }
      }
      if (!head.empty() && framer.phase() == hb::HttpRequestFramer::Phase::kIdle) {
        FUZZ_CHECK(body.size() == body_expected);
        Serve(routes.table(), head, body, sse_chunk_bytes);
        head.clear();
      }
    }
  }
  if (framer.phase() == hb::HttpRequestFramer::Phase::kRejected) {
    const int status = framer.error_status();
    FUZZ_CHECK(status == 400 || status == 411 || status == 413 || status == 414 || status == 431);
    const std::string answer =
        hb::HttpErrorResponse(status, hb::env::ErrorBody(framer.error_message()));
    FUZZ_CHECK(absl::StartsWith(answer, "HTTP/1.1 " + std::to_string(status) + " "));
  }
  return 0;
}
