#include "bench/env_load_ors.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/json.h"

namespace hb::bench {
namespace {

struct Reply {
  int code = 0;  // 0: no response (connection failure)
  std::string body;
};

Reply ReadReply(evhttp_request* req) {
  Reply reply;
  if (req == nullptr) return reply;
  reply.code = evhttp_request_get_response_code(req);
  evbuffer* in = evhttp_request_get_input_buffer(req);
  reply.body.resize(evbuffer_get_length(in));
  evbuffer_remove(in, reply.body.data(), reply.body.size());
  return reply;
}

// The data of the first "task_id" event of a /create_session stream, or "".
std::string SessionIdOf(const std::string& events) {
  const size_t event = events.find("event: task_id");
  const size_t data = events.find("data: ", event == std::string::npos ? 0 : event);
  if (event == std::string::npos || data == std::string::npos) return "";
  const size_t end = events.find_first_of("\r\n", data);
  return events.substr(data + 6, end == std::string::npos ? std::string::npos : end - data - 6);
}

constexpr char kPrompt[] =
    "<|im_start|>user\nWhat should I do about this?<|im_end|>\n<|im_start|>assistant\n";

// The path and body of one trainer-route call of `reply` for `task` (see the header).
std::pair<std::string, std::string> TrainerCall(const std::string& route, const std::string& task,
                                                const std::string& reply) {
  if (route == "get_reward") {
    return {"/get_reward",
            absl::StrCat("{\"query\":[", JsonQuote(absl::StrCat(kPrompt, reply, "<|im_end|>")),
                         "],\"prompts\":[", JsonQuote(kPrompt), "],\"labels\":[", JsonQuote(task),
                         "]}")};
  }
  if (route == "reward") {
    return {"/reward", absl::StrCat("{\"prompt\":", JsonQuote(kPrompt),
                                    ",\"response\":", JsonQuote(absl::StrCat(reply, "<|im_end|>")),
                                    ",\"label\":", JsonQuote(task), "}")};
  }
  return {"/verify",
          absl::StrCat("{\"prompt_id\":", JsonQuote(task),
                       ",\"responses_create_params\":{\"input\":[{\"role\":\"user\",\"content\":"
                       "\"What should I do about this?\",\"type\":\"message\"}]},"
                       "\"response\":{\"object\":\"response\",\"output\":[{\"type\":\"message\","
                       "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":",
                       JsonQuote(reply), "}]}]}}")};
}

// Whether a 200 answer of `route` carries a reward (not an error, not NeMo-Gym's judge-failure
// marker).
bool HasReward(const std::string& route, const std::string& body) {
  if (route == "ors") return absl::StrContains(body, "\"ok\":true");
  if (route == "get_reward") return absl::StrContains(body, "\"rewards\":[");
  return absl::StrContains(body, "\"reward\":") &&
         !absl::StrContains(body, "\"_ng_failure_class\"");
}

}  // namespace

class OrsLoadDriver::Impl {
 public:
  explicit Impl(OrsLoadOptions options) : options_(std::move(options)), base_(event_base_new()) {}
  ~Impl() {
    for (Conn& conn : conns_) evhttp_connection_free(conn.http);
    event_base_free(base_);
  }

  absl::Status OpenSessions();
  void Run(int count, int in_flight, const std::function<std::string(int64_t)>& reply,
           LoadRecorder& recorder);

 private:
  struct Conn {
    Impl* impl = nullptr;
    evhttp_connection* http = nullptr;
    std::string sid;
    std::string task;
    absl::Time start;
  };

  // One request on `conn`, waited for by running the loop.
  Reply Blocking(Conn& conn, evhttp_cmd_type method, const std::string& path,
                 const std::string& body);
  evhttp_request* NewRequest(Conn& conn, void (*done)(evhttp_request*, void*), void* arg);
  void Send(evhttp_request* req, Conn& conn, evhttp_cmd_type method, const std::string& path,
            const std::string& body);
  void Launch(Conn& conn);
  static void OnCall(evhttp_request* req, void* arg);

  const OrsLoadOptions options_;
  event_base* const base_;
  std::vector<Conn> conns_;
  // The run in progress.
  const std::function<std::string(int64_t)>* reply_ = nullptr;
  LoadRecorder* recorder_ = nullptr;
  int64_t launched_ = 0, finished_ = 0, count_ = 0;
};

evhttp_request* OrsLoadDriver::Impl::NewRequest(Conn& conn, void (*done)(evhttp_request*, void*),
                                                void* arg) {
  evhttp_request* req = evhttp_request_new(done, arg);
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  evhttp_add_header(headers, "Host", options_.host.c_str());
  evhttp_add_header(headers, "Content-Type", "application/json");
  if (!conn.sid.empty()) evhttp_add_header(headers, "X-Session-ID", conn.sid.c_str());
  return req;
}

void OrsLoadDriver::Impl::Send(evhttp_request* req, Conn& conn, evhttp_cmd_type method,
                               const std::string& path, const std::string& body) {
  evbuffer_add(evhttp_request_get_output_buffer(req), body.data(), body.size());
  evhttp_make_request(conn.http, req, method, path.c_str());
}

Reply OrsLoadDriver::Impl::Blocking(Conn& conn, evhttp_cmd_type method, const std::string& path,
                                    const std::string& body) {
  struct Waiter {
    event_base* base;
    Reply reply;
  } waiter{base_, {}};
  auto done = [](evhttp_request* req, void* arg) {
    auto* w = static_cast<Waiter*>(arg);
    w->reply = ReadReply(req);
    event_base_loopbreak(w->base);
  };
  Send(NewRequest(conn, done, &waiter), conn, method, path, body);
  event_base_dispatch(base_);
  return waiter.reply;
}

absl::Status OrsLoadDriver::Impl::OpenSessions() {
  const std::string& route = options_.route;
  if (route != "ors" && route != "get_reward" && route != "reward" && route != "verify") {
    return absl::InvalidArgumentError(
        absl::StrCat("route must be ors, get_reward, reward or verify, got '", route, "'"));
  }
  conns_.resize(options_.connections);
  for (size_t i = 0; i < conns_.size(); ++i) {
    Conn& conn = conns_[i];
    conn.impl = this;
    conn.http = evhttp_connection_base_new(base_, nullptr, options_.host.c_str(),
                                           static_cast<uint16_t>(options_.port));
    evhttp_connection_set_timeout(conn.http, 600);
    conn.task = options_.task_ids[i % options_.task_ids.size()];
    if (route != "ors") continue;  // the trainer routes need no session
    const Reply created = Blocking(conn, EVHTTP_REQ_POST, "/create_session", "");
    conn.sid = SessionIdOf(created.body);
    if (created.code != 200 || conn.sid.empty()) {
      return absl::UnavailableError(
          absl::StrCat("POST /create_session: HTTP ", created.code, " ", created.body));
    }
    const std::string& task = conn.task;
    const Reply opened =
        Blocking(conn, EVHTTP_REQ_POST, "/create",
                 absl::StrCat("{\"task_spec\":{\"prompt_id\":", JsonQuote(task), "}}"));
    if (opened.code != 200) {
      return absl::UnavailableError(
          absl::StrCat("POST /create for task ", task, ": HTTP ", opened.code, " ", opened.body));
    }
  }
  return absl::OkStatus();
}

void OrsLoadDriver::Impl::Launch(Conn& conn) {
  const int64_t n = launched_++;
  conn.start = absl::Now();
  if (options_.route != "ors") {
    auto [path, body] = TrainerCall(options_.route, conn.task, (*reply_)(n));
    return Send(NewRequest(conn, OnCall, &conn), conn, EVHTTP_REQ_POST, path, body);
  }
  Send(NewRequest(conn, OnCall, &conn), conn, EVHTTP_REQ_POST,
       absl::StrCat("/", options_.env_name, "/call"),
       absl::StrCat("{\"name\":\"answer\",\"input\":{\"answer\":", JsonQuote((*reply_)(n)), "}}"));
}

void OrsLoadDriver::Impl::OnCall(evhttp_request* req, void* arg) {
  auto* conn = static_cast<Conn*>(arg);
  Impl* self = conn->impl;
  const double ms = absl::ToDoubleMilliseconds(absl::Now() - conn->start);
  const Reply reply = ReadReply(req);
  // An ORS result is the RunToolOutput JSON in the stream's "end" event (one chunk when short).
  const bool ok = reply.code == 200 && HasReward(self->options_.route, reply.body);
  self->recorder_->Record(ms, self->options_.graded,
                          ok ? "" : absl::StrCat("HTTP ", reply.code, ": ", reply.body));
  ++self->finished_;
  if (self->launched_ < self->count_) {
    self->Launch(*conn);
  } else if (self->finished_ == self->count_) {
    event_base_loopbreak(self->base_);
  }
}

void OrsLoadDriver::Impl::Run(int count, int in_flight,
                              const std::function<std::string(int64_t)>& reply,
                              LoadRecorder& recorder) {
  reply_ = &reply;
  recorder_ = &recorder;
  count_ = launched_ + count;
  const int64_t first = launched_;
  finished_ = launched_;
  for (int i = 0; i < in_flight && i < static_cast<int>(conns_.size()) && launched_ < count_; ++i) {
    Launch(conns_[i]);
  }
  if (launched_ > first) event_base_dispatch(base_);
}

OrsLoadDriver::OrsLoadDriver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OrsLoadDriver::~OrsLoadDriver() = default;

absl::StatusOr<std::unique_ptr<OrsLoadDriver>> OrsLoadDriver::Connect(OrsLoadOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (absl::Status opened = impl->OpenSessions(); !opened.ok()) return opened;
  return std::unique_ptr<OrsLoadDriver>(new OrsLoadDriver(std::move(impl)));
}

void OrsLoadDriver::Run(int count, int in_flight, const std::function<std::string(int64_t)>& reply,
                        LoadRecorder& recorder) {
  impl_->Run(count, in_flight, reply, recorder);
}

}  // namespace hb::bench
