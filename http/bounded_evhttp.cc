#include "http/bounded_evhttp.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/clock.h"
#include "common/base/json.h"
#include "common/base/logging.h"

namespace hb {
namespace {

absl::string_view Reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    default:
      return "Error";
  }
}

std::string DetailBody(int /*status*/, absl::string_view message) {
  return absl::StrCat("{\"detail\":", JsonQuote(message), "}");
}

}  // namespace

absl::Status CheckHttpServerLimits(const HttpServerLimits& limits) {
  for (auto [name, value] :
       {std::pair<const char*, size_t>{"max_request_line_bytes", limits.max_request_line_bytes},
        {"max_header_bytes", limits.max_header_bytes},
        {"max_header_count", limits.max_header_count},
        {"max_body_bytes", limits.max_body_bytes}}) {
    if (value == 0) return absl::InvalidArgumentError(absl::StrCat(name, " must be > 0"));
  }
  if (limits.max_request_line_bytes > limits.max_header_bytes) {
    return absl::InvalidArgumentError("max_request_line_bytes must be <= max_header_bytes");
  }
  if (limits.max_request_time <= absl::ZeroDuration() || limits.linger < absl::ZeroDuration() ||
      limits.idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "max_request_time and idle_timeout must be > 0 and linger >= 0");
  }
  return absl::OkStatus();
}

std::string HttpErrorResponse(int status, absl::string_view json_body) {
  return absl::StrCat("HTTP/1.1 ", status, " ", Reason(status),
                      "\r\nContent-Type: application/json\r\nContent-Length: ", json_body.size(),
                      "\r\nConnection: close\r\n\r\n", json_body);
}

// ---------------------------------------------------------------------------------------------
// HttpRequestFramer

void HttpRequestFramer::Reject(int status, std::string message) {
  phase_ = Phase::kRejected;
  error_status_ = status;
  error_message_ = std::move(message);
  std::string().swap(head_);
}

size_t HttpRequestFramer::ConsumeHead(absl::string_view data) {
  size_t used = 0;
  while (used < data.size() && (phase_ == Phase::kIdle || phase_ == Phase::kHead) && !head_ready_) {
    const char* begin = data.data() + used;
    const size_t rest = data.size() - used;
    const char* nl = static_cast<const char*>(std::memchr(begin, '\n', rest));
    const size_t take = nl != nullptr ? static_cast<size_t>(nl - begin) + 1 : rest;
    // Checked before anything is buffered: the head never grows past its limits.
    const size_t line_bytes = head_.size() - line_start_ + take - (nl != nullptr ? 1 : 0);
    if (!have_request_line_ && line_bytes > limits_.max_request_line_bytes) {
      Reject(414, absl::StrCat("request line is over the limit of ", limits_.max_request_line_bytes,
                               " bytes (max_request_line_bytes)"));
      return used + take;
    }
    if (head_.size() + take > limits_.max_header_bytes) {
      Reject(431, absl::StrCat("request head is over the limit of ", limits_.max_header_bytes,
                               " bytes (max_header_bytes)"));
      return used + take;
    }
    phase_ = Phase::kHead;
    head_.append(begin, take);
    used += take;
    if (nl == nullptr) break;
    absl::string_view line(head_.data() + line_start_, head_.size() - line_start_ - 1);
    absl::ConsumeSuffix(&line, "\r");
    Line(line);
  }
  return used;
}

void HttpRequestFramer::Line(absl::string_view line) {
  if (!have_request_line_) {
    if (line.empty()) {  // a blank line before the request line
      head_.clear();
      line_start_ = 0;
      return;
    }
    have_request_line_ = true;
    method_ = std::string(line.substr(0, line.find(' ')));
  } else if (line.empty()) {
    EndHead();
    return;
  } else if (++header_count_ > limits_.max_header_count) {
    Reject(431, absl::StrCat("more than ", limits_.max_header_count,
                             " request header lines (max_header_count)"));
    return;
  }
  line_start_ = head_.size();
}

void HttpRequestFramer::EndHead() {
  absl::string_view head(head_);
  bool have_length = false;
  uint64_t length = 0;
  size_t pos = head.find('\n') + 1;  // past the request line
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    if (end == absl::string_view::npos) end = head.size();
    absl::string_view line = head.substr(pos, end - pos);
    pos = end + 1;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      return Reject(411,
                    "Transfer-Encoding request bodies are not accepted: send the body with "
                    "Content-Length");
    }
    if (!absl::EqualsIgnoreCase(name, "Content-Length")) continue;
    uint64_t parsed = 0;
    if (value.empty() || value.size() > 19 ||
        !std::all_of(value.begin(), value.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(value, &parsed)) {
      return Reject(400, absl::StrCat("malformed Content-Length ", JsonQuote(value)));
    }
    if (have_length && parsed != length) {
      return Reject(400, "conflicting Content-Length headers");
    }
    have_length = true;
    length = parsed;
  }
  // evhttp reads no body for HEAD and TRACE (evhttp_method_may_have_body).
  if (method_ == "HEAD" || method_ == "TRACE") length = 0;
  if (length > limits_.max_body_bytes) {
    return Reject(413, absl::StrCat("request body is ", length, " bytes, over the limit of ",
                                    limits_.max_body_bytes, " bytes (max_body_bytes)"));
  }
  head_ready_ = true;
  body_left_ = length;
  phase_ = length > 0 ? Phase::kBody : Phase::kIdle;
}

void HttpRequestFramer::ConsumeBody(size_t n) {
  body_left_ -= std::min(n, body_left_);
  if (body_left_ == 0 && phase_ == Phase::kBody) phase_ = Phase::kIdle;
}

std::string HttpRequestFramer::TakeHead() {
  std::string head;
  head.swap(head_);
  head_ready_ = false;
  have_request_line_ = false;
  header_count_ = 0;
  line_start_ = 0;
  method_.clear();
  return head;
}

namespace {

// Sends what `buffer` holds, up to kSendChunks of its chunks in one sendmsg(2) (MSG_NOSIGNAL: a
// peer that went away must not raise SIGPIPE), and drains what was sent; sendmsg's result. One
// call for the head and the body: written apart, the body's small segment waits behind Nagle for
// the ACK of the head, which a client that delays its ACKs holds for ~40 ms.
ssize_t SendSome(evbuffer* buffer, evutil_socket_t fd) {
  constexpr int kSendChunks = 16;
  evbuffer_iovec chunks[kSendChunks];
  const int count = std::min(evbuffer_peek(buffer, -1, nullptr, chunks, kSendChunks), kSendChunks);
  if (count < 1) return 0;
  iovec iov[kSendChunks];
  for (int i = 0; i < count; ++i) iov[i] = iovec{chunks[i].iov_base, chunks[i].iov_len};
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = static_cast<size_t>(count);
  const ssize_t n = sendmsg(fd, &message, MSG_NOSIGNAL);
  if (n > 0) evbuffer_drain(buffer, static_cast<size_t>(n));
  return n;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BoundedEvhttp::Connection: the filter state of one accepted connection. Owned by its filter
// bufferevent (deleted by its free_context callback when evhttp frees the connection).

class BoundedEvhttp::Connection {
 public:
  Connection(BoundedEvhttp& owner, event_base* base) : owner_(owner), framer_(owner.limits_) {
    deadline_ = evtimer_new(base, OnDeadline, this);
    idle_ = evtimer_new(base, OnIdleTick, this);
    const timeval tv = absl::ToTimeval(owner_.limits_.idle_timeout);
    evtimer_add(idle_, &tv);
    linger_ = evtimer_new(base, OnLingerEnd, this);
    ++owner_.counters_.connections;
  }

  ~Connection() {
    event_free(deadline_);
    event_free(linger_);
    event_free(idle_);
    if (writable_.ev != nullptr) event_free(writable_.ev);
    if (answer_ != nullptr) evbuffer_free(answer_);
    // Runs in the filter's destructor. libevent 2.1.12 leaves the socket bufferevent's
    // callbacks pointing at the filter until the socket bufferevent is finalized in a later
    // loop turn (be_filter_unlink, BEV_OPT_CLOSE_ON_FREE): a read in between would run on the
    // freed filter. Detach and stop it now.
    if (socket_ != nullptr) {
      bufferevent_setcb(socket_, nullptr, nullptr, nullptr, nullptr);
      bufferevent_disable(socket_, EV_READ | EV_WRITE);
    }
    --owner_.counters_.connections;
    owner_.Released(peak_buffered_ + (answered_ ? (16 << 10) : 0));
  }

  // evhttp_set_bevcb: a filter over a socket bufferevent (evhttp sets the fd through the
  // filter). Both close on free, as libevent's filters expect: evhttp then only shuts the
  // socket down, and the socket bufferevent closes it after its events are deleted.
  static bufferevent* NewBufferevent(event_base* base, void* arg) {
    auto& owner = *static_cast<BoundedEvhttp*>(arg);
    bufferevent* socket = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (socket == nullptr) return nullptr;
    auto* connection = new Connection(owner, base);
    bufferevent* filter =
        bufferevent_filter_new(socket, &Connection::Filter, &Connection::Out, BEV_OPT_CLOSE_ON_FREE,
                               &Connection::Free, connection);
    if (filter == nullptr) {
      delete connection;
      bufferevent_free(socket);
      return nullptr;
    }
    connection->socket_ = socket;
    connection->filter_ = filter;
    connection->reply_cb_ =
        evbuffer_add_cb(bufferevent_get_output(filter), &Connection::OnReply, connection);
    return filter;
  }

 private:
  static void Free(void* ctx) { delete static_cast<Connection*>(ctx); }

  // Moves what the client sent (src) to evhttp (dst): complete heads within the limits, then
  // their bodies; after an error answer, discards it. `limit` (evhttp sets no read watermark
  // on its connections) is not used.
  static bufferevent_filter_result Filter(evbuffer* src, evbuffer* dst, ev_ssize_t /*limit*/,
                                          bufferevent_flush_mode /*mode*/, void* ctx) {
    return static_cast<Connection*>(ctx)->Pass(src, dst);
  }

  bufferevent_filter_result Pass(evbuffer* src, evbuffer* dst) {
    using Phase = HttpRequestFramer::Phase;
    traffic_ = true;
    size_t passed = 0;
    while (evbuffer_get_length(src) > 0) {
      if (answered_) {
        evbuffer_drain(src, evbuffer_get_length(src));
        break;
      }
      if (framer_.phase() == Phase::kBody) {
        const size_t n = std::min(framer_.body_left(), evbuffer_get_length(src));
        evbuffer_remove_buffer(src, dst, n);
        framer_.ConsumeBody(n);
        passed += n;
        if (framer_.phase() == Phase::kIdle) evtimer_del(deadline_);
        continue;
      }
      if (framer_.phase() == Phase::kIdle) StartDeadline();
      evbuffer_iovec chunk;
      if (evbuffer_peek(src, -1, nullptr, &chunk, 1) < 1) break;
      const size_t used = framer_.ConsumeHead(
          absl::string_view(static_cast<const char*>(chunk.iov_base), chunk.iov_len));
      evbuffer_drain(src, used);
      peak_buffered_ = std::max(peak_buffered_, framer_.buffered());
      if (framer_.phase() == Phase::kRejected) {
        Answer(framer_.error_status(), framer_.error_message());
        continue;
      }
      if (framer_.head_ready()) {
        const std::string head = framer_.TakeHead();
        evbuffer_add(dst, head.data(), head.size());
        passed += head.size();
        if (framer_.phase() == Phase::kIdle) evtimer_del(deadline_);
      }
    }
    return passed > 0 ? BEV_OK : BEV_NEED_MORE;
  }

  // evhttp's writes. A filter's writer is told "all written" as soon as its output reached the
  // socket bufferevent, and evhttp frees a `Connection: close` connection right then, which
  // would discard what the socket bufferevent had not sent yet. So the filter passes nothing
  // on here: OnWritable writes evhttp's output to the socket itself, on the next loop turn
  // (as a socket bufferevent would: evhttp sets what to do when the write is done only after
  // adding the data), and tells evhttp once all of it is out.
  static bufferevent_filter_result Out(evbuffer* /*src*/, evbuffer* /*dst*/, ev_ssize_t /*limit*/,
                                       bufferevent_flush_mode /*mode*/, void* /*ctx*/) {
    return BEV_NEED_MORE;
  }

  // Writes what `pending` holds until the socket is full (then waits for it to be writable);
  // true when all of it is out.
  bool WritePending(evbuffer* pending) {
    const evutil_socket_t fd = bufferevent_getfd(socket_);
    while (fd >= 0 && evbuffer_get_length(pending) > 0) {
      if (SendSome(pending, fd) > 0) {
        traffic_ = true;
        owner_.counters_.sends++;
        continue;
      }
      const int err = EVUTIL_SOCKET_ERROR();
      if (err != EAGAIN && err != EWOULDBLOCK && err != EINTR) {
        write_failed_ = true;
        Writable()->active(EV_WRITE);
      } else {
        Writable()->add();
      }
      return false;
    }
    return fd >= 0;
  }

  // evhttp adds its answer to the filter's output while writing is still disabled and enables
  // it afterwards, which does not make a filter write what is pending (only the socket's next
  // write event would): so every addition schedules a flush on the next loop turn.
  static void OnReply(evbuffer* /*buffer*/, const evbuffer_cb_info* info, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (info->n_added > 0 && bufferevent_getfd(self->socket_) >= 0) {
      self->Writable()->active(EV_WRITE);
    }
  }

  struct WritableEvent {
    event* ev;
    void active(short what) { event_active(ev, what, 0); }
    void add() { event_add(ev, nullptr); }
  };
  // The event that flushes evhttp's pending answer, on the socket's fd (made at first use: the
  // fd is set after the filter is made).
  WritableEvent* Writable() {
    if (writable_.ev == nullptr) {
      writable_.ev = event_new(bufferevent_get_base(socket_), bufferevent_getfd(socket_), EV_WRITE,
                               OnWritable, this);
    }
    return &writable_;
  }

  // False once evhttp has freed the connection (bufferevent_free clears the callbacks; this
  // object goes when the filter is finalized).
  bool Alive() const {
    bufferevent_event_cb event_cb = nullptr;
    bufferevent_getcb(filter_, nullptr, nullptr, &event_cb, nullptr);
    return event_cb != nullptr;
  }

  static void OnWritable(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (!self->Alive()) return;
    if (self->write_failed_) {
      bufferevent_trigger_event(self->filter_, BEV_EVENT_WRITING | BEV_EVENT_ERROR, 0);
      return;
    }
    if (self->answered_) return self->FlushAnswer();
    // Writes what evhttp left in the filter's output; when all of it is out, tells evhttp
    // (which may free the connection in its callback: nothing here touches it afterwards).
    // Nothing pending: evhttp was told already (telling it again would end its next request).
    evbuffer* pending = bufferevent_get_output(self->filter_);
    if (evbuffer_get_length(pending) == 0) return;
    if (!self->WritePending(pending)) return;
    bufferevent_trigger(self->filter_, EV_WRITE, 0);
  }

  // Closes the connection when nothing moved either way since the last tick.
  static void OnIdleTick(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (!self->Alive()) return;
    if (!self->traffic_) {
      bufferevent_trigger_event(self->filter_, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
      return;
    }
    self->traffic_ = false;
    const timeval tv = absl::ToTimeval(self->owner_.limits_.idle_timeout);
    evtimer_add(self->idle_, &tv);
  }

  void StartDeadline() {
    const timeval tv = absl::ToTimeval(owner_.limits_.max_request_time);
    evtimer_add(deadline_, &tv);
  }

  static void OnDeadline(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (!self->Alive()) return;
    // evhttp stops reading while it serves a request: bytes of a pipelined next request that
    // arrived with it are not the client's delay. Its clock starts again.
    if ((bufferevent_get_enabled(self->filter_) & EV_READ) == 0) return self->StartDeadline();
    self->owner_.counters_.timed_out++;
    self->Answer(408, absl::StrCat("request did not arrive whole within ",
                                   absl::FormatDuration(self->owner_.limits_.max_request_time),
                                   " of its first byte (max_request_time)"));
  }

  // Writes the error answer straight to the socket; the write side is shut down once it is
  // flushed (FlushAnswer) and the connection closed after `linger`.
  void Answer(int status, const std::string& message) {
    if (answered_) return;
    answered_ = true;
    evtimer_del(deadline_);
    owner_.counters_.rejected++;
    if (auto suffix = owner_.log_.Admit(absl::StrCat(status))) {
      HB_LOG_WARN("http: answered {} and closing the connection: {}{}", status, message, *suffix);
    }
    const std::string body =
        owner_.error_body_ ? owner_.error_body_(status, message) : DetailBody(status, message);
    const std::string response = HttpErrorResponse(status, body);
    answer_ = evbuffer_new();
    evbuffer_add(answer_, response.data(), response.size());
    FlushAnswer();
    const timeval tv = absl::ToTimeval(owner_.limits_.linger);
    evtimer_add(linger_, &tv);
  }

  // Sends what is left of the error answer (send(2), no SIGPIPE); once all of it is out,
  // shuts the write side down. Waits for the socket to be writable when it is full; a failed
  // send closes the connection at once.
  void FlushAnswer() {
    if (!WritePending(answer_) || shut_) return;
    shut_ = true;
    shutdown(bufferevent_getfd(socket_), SHUT_WR);
  }

  // Tells evhttp the connection failed while reading: it frees it (and so this object).
  static void OnLingerEnd(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<Connection*>(arg);
    if (!self->Alive()) return;
    bufferevent_trigger_event(self->filter_, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
  }

  BoundedEvhttp& owner_;
  HttpRequestFramer framer_;
  bufferevent* socket_ = nullptr;
  bufferevent* filter_ = nullptr;
  evbuffer* answer_ = nullptr;  // the error answer not sent yet
  event* deadline_ = nullptr;
  event* linger_ = nullptr;
  event* idle_ = nullptr;
  bool traffic_ = false;  // a byte moved since the last idle tick
  WritableEvent writable_{nullptr};
  evbuffer_cb_entry* reply_cb_ = nullptr;
  bool write_failed_ = false;
  bool answered_ = false;
  bool shut_ = false;
  size_t peak_buffered_ = 0;
};

BoundedEvhttp::BoundedEvhttp(evhttp* http, HttpServerLimits limits, HttpErrorBody error_body)
    : limits_(limits),
      error_body_(std::move(error_body)),
      log_(Clock::Real(), RateLimitedLogOptions{5, absl::Seconds(10)}) {
  evhttp_set_bevcb(http, &Connection::NewBufferevent, this);
  // Backstops: the filter hands evhttp only heads and bodies within the limits.
  evhttp_set_max_headers_size(http, static_cast<ev_ssize_t>(limits_.max_header_bytes + 1024));
  evhttp_set_max_body_size(http, static_cast<ev_ssize_t>(limits_.max_body_bytes));
}

void BoundedEvhttp::Released(size_t bytes) {
  if (limits_.trim_after_bytes == 0) return;
  released_bytes_ += bytes;
  if (released_bytes_ < limits_.trim_after_bytes) return;
  released_bytes_ = 0;
  counters_.trims++;
  malloc_trim(0);
}

}  // namespace hb
