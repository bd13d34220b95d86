#include "http/plain_http1.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/base/host_port.h"

namespace hb {

// Named (not file-local): PlainHttp1Pool::Conn holds an Exchange, and a type with linkage must
// not hold one from an anonymous namespace (gcc's -Wsubobject-linkage in a unity source).
namespace plain_http1_internal {

// Where an http:// URL points.
struct Target {
  std::string host;         // for getaddrinfo (no brackets)
  std::string port;         // digits
  std::string origin;       // host:port, the idle pool's key
  std::string host_header;  // host, or host:port when the port is not 80
  std::string path;         // path and query, starting with '/'
};

// What one request needs wherever it is sent (moved to a new connection on a retry).
struct Exchange {
  uint64_t id = 0;
  const HttpRequest* request = nullptr;
  Target target;
  std::string head;
  PlainHttp1Pool::SteadyTime deadline{};
  int opened = 0;
  std::vector<iovec> iov;  // [0] the head, then the body; what is left to send
  size_t iov_next = 0;
};

}  // namespace plain_http1_internal

using plain_http1_internal::Exchange;
using plain_http1_internal::Target;

namespace {

constexpr size_t kReadBytes = 64 << 10;
constexpr auto kAddressTtl = std::chrono::seconds(60);

absl::Status Unavailable(absl::string_view what, absl::string_view origin) {
  return absl::UnavailableError(absl::StrCat("HTTP transport: ", what, " (", origin, ")"));
}

absl::StatusOr<Target> ParseTarget(absl::string_view url) {
  auto malformed = [](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP transport: URL malformed (", why, ")"));
  };
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return malformed("a space or control");
  }
  absl::string_view rest = url.substr(7);  // after "http://" (Accepts checked it)
  const size_t end = rest.find_first_of("/?#");
  absl::string_view authority = rest.substr(0, end);
  absl::string_view tail = end == absl::string_view::npos ? "" : rest.substr(end);
  tail = tail.substr(0, tail.find('#'));
  Target t;
  t.path = tail.empty() || tail[0] == '?' ? absl::StrCat("/", tail) : std::string(tail);
  HostPortRules rules;
  rules.name = "its host[:port]";
  rules.default_port = 80;
  absl::StatusOr<HostPort> address = ParseHostPort(authority, rules);
  if (!address.ok()) return malformed(address.status().message());
  t.host = address->host;
  t.port = std::to_string(address->port);
  t.origin = address->ToString();
  t.host_header = address->port == 80 ? address->DisplayHost() : t.origin;
  return t;
}

bool HasHeader(const HttpRequest& request, absl::string_view name) {
  for (const auto& [key, value] : request.headers) {
    if (absl::EqualsIgnoreCase(key, name)) return true;
  }
  return false;
}

// The request line and headers; kInvalidArgument for a header with CR or LF in it.
absl::StatusOr<std::string> RequestHead(const Target& target, const HttpRequest& request,
                                        size_t body_bytes, const std::string& user_agent) {
  const bool get = request.method == "GET";
  std::string head = absl::StrCat(get ? "GET " : "POST ", target.path, " HTTP/1.1\r\n");
  if (!HasHeader(request, "Host")) absl::StrAppend(&head, "Host: ", target.host_header, "\r\n");
  if (!HasHeader(request, "User-Agent") && !user_agent.empty()) {
    absl::StrAppend(&head, "User-Agent: ", user_agent, "\r\n");
  }
  if (!HasHeader(request, "Accept")) head += "Accept: */*\r\n";
  for (const auto& [name, value] : request.headers) {
    if (name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("HTTP transport: header ", absl::CEscape(name), " has CR, LF or ':'"));
    }
    if (value.empty() || absl::EqualsIgnoreCase(name, "Content-Length") ||
        absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      continue;
    }
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  if (!get) absl::StrAppend(&head, "Content-Length: ", body_bytes, "\r\n");
  head += "\r\n";
  return head;
}

// Appends the request's body to `iov` (nothing for a GET; no empty iovec, so that a sendmsg
// that sends anything always moves) and returns its size.
size_t AppendBody(const HttpRequest& request, std::vector<iovec>* iov) {
  if (request.method == "GET") return 0;
  size_t bytes = 0;
  auto append = [&](const std::string& data) {
    if (data.empty()) return;
    iov->push_back({const_cast<char*>(data.data()), data.size()});
    bytes += data.size();
  };
  if (request.body_parts.empty()) append(request.body);
  for (const HttpBodyPart& part : request.body_parts) {
    if (part.data != nullptr) append(*part.data);
  }
  return bytes;
}

// Inflates a gzip, zlib or raw deflate body; the limit applies to what comes out.
absl::StatusOr<std::string> Inflate(const std::string& in, size_t limit, bool raw) {
  z_stream zs{};
  if (inflateInit2(&zs, raw ? -MAX_WBITS : MAX_WBITS + 32) != Z_OK) {
    return absl::InternalError("HTTP transport: inflateInit2 failed");
  }
  std::string out;
  char buffer[16 << 10];
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof(buffer);
    rc = inflate(&zs, Z_NO_FLUSH);
    const size_t produced = sizeof(buffer) - zs.avail_out;
    if (out.size() + produced > limit) {
      inflateEnd(&zs);
      return BodyOverLimitError(limit);
    }
    out.append(buffer, produced);
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // truncated input
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return absl::UnavailableError("HTTP transport: the response body does not inflate");
  }
  return out;
}

}  // namespace

struct PlainHttp1Pool::Conn {
  int fd = -1;
  std::string origin;
  Exchange ex;  // ex.id == 0: idle
  bool connecting = false;
  bool reused = false;
  bool answered = false;
  bool watching_out = false;
  bool has_deadline = false;
  SteadyTime deadline_key{};
  Http1ResponseParser parser;
};

PlainHttp1Pool::PlainHttp1Pool(int epoll_fd, uint32_t epoll_tag, PlainHttp1Options options,
                               Done done)
    : epoll_fd_(epoll_fd),
      epoll_tag_(epoll_tag),
      options_(std::move(options)),
      done_(std::move(done)),
      read_buffer_(new char[kReadBytes]) {}

PlainHttp1Pool::~PlainHttp1Pool() {
  for (auto& conn : conns_) {
    if (conn != nullptr) close(conn->fd);
  }
}

bool PlainHttp1Pool::Accepts(const HttpRequest& request) {
  if (request.url.size() < 7 || !absl::StartsWithIgnoreCase(request.url, "http://")) return false;
  const absl::string_view rest = absl::string_view(request.url).substr(7);
  if (rest.substr(0, rest.find_first_of("/?#")).find('@') != absl::string_view::npos) {
    return false;  // user info: libcurl turns it into basic auth
  }
  for (const HttpBodyPart& part : request.body_parts) {
    if (!part.file_path.empty()) return false;
  }
  return true;
}

bool PlainHttp1Pool::ProxyInEnvironment() {
  for (const char* name : {"http_proxy", "all_proxy", "ALL_PROXY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return true;
  }
  return false;
}

absl::StatusOr<const PlainHttp1Pool::Address*> PlainHttp1Pool::Resolve(const std::string& host,
                                                                       const std::string& port,
                                                                       const std::string& origin) {
  const SteadyTime now = std::chrono::steady_clock::now();
  auto it = addresses_.find(origin);
  if (it != addresses_.end() && now - it->second.resolved < kAddressTtl) return &it->second;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Unavailable(absl::StrCat("Could not resolve host: ", gai_strerror(rc)), origin);
  }
  Address& address = addresses_[origin];
  std::memcpy(&address.addr, found->ai_addr, found->ai_addrlen);
  address.len = found->ai_addrlen;
  address.resolved = now;
  freeaddrinfo(found);
  return &address;
}

absl::StatusOr<PlainHttp1Pool::Conn*> PlainHttp1Pool::Connection(const std::string& origin,
                                                                 const std::string& host,
                                                                 const std::string& port,
                                                                 int* opened) {
  auto idle = idle_.find(origin);
  if (idle != idle_.end() && !idle->second.empty()) {
    Conn* conn = idle->second.back();
    idle->second.pop_back();
    --idle_count_;
    conn->reused = true;
    return conn;
  }
  absl::StatusOr<const Address*> address = Resolve(host, port, origin);
  if (!address.ok()) return address.status();
  const int fd = socket((*address)->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(absl::StrCat("socket: ", std::strerror(errno)), origin);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  const bool connecting =
      connect(fd, reinterpret_cast<const sockaddr*>(&(*address)->addr), (*address)->len) != 0;
  if (connecting && errno != EINPROGRESS) {
    const int error = errno;
    close(fd);
    addresses_.erase(origin);
    return Unavailable(absl::StrCat("Failed to connect: ", std::strerror(error)), origin);
  }
  auto conn = std::make_unique<Conn>();
  conn->fd = fd;
  conn->origin = origin;
  conn->connecting = connecting;
  conn->watching_out = connecting;
  epoll_event ev{};
  ev.events = EPOLLIN | (connecting ? uint32_t{EPOLLOUT} : 0u);
  ev.data.u64 = (static_cast<uint64_t>(epoll_tag_) << 32) | static_cast<uint32_t>(fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  if (static_cast<size_t>(fd) >= conns_.size()) conns_.resize(fd + 1);
  conns_[fd] = std::move(conn);
  ++*opened;
  return conns_[fd].get();
}

absl::Status PlainHttp1Pool::Start(uint64_t id, const HttpRequest& request, size_t max_body_bytes,
                                   SteadyTime deadline) {
  absl::StatusOr<Target> target = ParseTarget(request.url);
  if (!target.ok()) return target.status();
  Exchange ex;
  ex.iov.push_back({});  // the head, pointed at in Begin
  const size_t body_bytes = AppendBody(request, &ex.iov);
  absl::StatusOr<std::string> head = RequestHead(*target, request, body_bytes, options_.user_agent);
  if (!head.ok()) return head.status();
  ex.id = id;
  ex.request = &request;
  ex.target = *std::move(target);
  ex.head = *std::move(head);
  ex.deadline = deadline;
  absl::StatusOr<Conn*> conn =
      Connection(ex.target.origin, ex.target.host, ex.target.port, &ex.opened);
  if (!conn.ok()) return conn.status();
  (*conn)->ex = std::move(ex);
  Begin(**conn, max_body_bytes);
  return absl::OkStatus();
}

void PlainHttp1Pool::Begin(Conn& conn, size_t max_body_bytes) {
  Exchange& ex = conn.ex;
  ex.iov[0] = {const_cast<char*>(ex.head.data()), ex.head.size()};
  ex.iov_next = 0;
  conn.parser.Reset(max_body_bytes);
  busy_[ex.id] = &conn;
  SetDeadline(conn, ex.deadline);
  Send(conn);
}

void PlainHttp1Pool::SetDeadline(Conn& conn, SteadyTime deadline) {
  if (conn.has_deadline) deadlines_.erase({conn.deadline_key, &conn});
  conn.deadline_key = deadline;
  conn.has_deadline = true;
  deadlines_.emplace(deadline, &conn);
}

void PlainHttp1Pool::Watch(Conn& conn, bool out) {
  if (conn.watching_out == out) return;
  epoll_event ev{};
  ev.events = EPOLLIN | (out ? uint32_t{EPOLLOUT} : 0u);
  ev.data.u64 = (static_cast<uint64_t>(epoll_tag_) << 32) | static_cast<uint32_t>(conn.fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn.fd, &ev);
  conn.watching_out = out;
}

void PlainHttp1Pool::Send(Conn& conn) {
  if (conn.connecting) {
    // Until the connect ends: the sooner of the request's deadline and the connect timeout.
    SetDeadline(conn, std::min(conn.ex.deadline,
                               std::chrono::steady_clock::now() + options_.connect_timeout));
    return;
  }
  std::vector<iovec>& iov = conn.ex.iov;
  size_t& next = conn.ex.iov_next;
  while (next < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + next;
    msg.msg_iovlen = std::min<size_t>(iov.size() - next, IOV_MAX);
    const ssize_t sent = sendmsg(conn.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        Watch(conn, true);
        return;
      }
      Fail(conn, Unavailable(absl::StrCat("Send failure: ", std::strerror(errno)), conn.origin));
      return;
    }
    // Every iovec is non-empty, so each sendmsg that sends anything moves `next` or the
    // offset in the current one.
    size_t left = static_cast<size_t>(sent);
    while (left > 0) {
      iovec& v = iov[next];
      const size_t take = std::min(left, v.iov_len);
      v.iov_base = static_cast<char*>(v.iov_base) + take;
      v.iov_len -= take;
      left -= take;
      if (v.iov_len == 0) ++next;
    }
  }
  Watch(conn, false);
}

void PlainHttp1Pool::OnEvent(int fd, uint32_t events) {
  Conn* conn = static_cast<size_t>(fd) < conns_.size() ? conns_[fd].get() : nullptr;
  if (conn == nullptr) return;
  if (conn->ex.id == 0) {
    Close(*conn);  // idle and readable: closed by the server (or it spoke out of turn)
    return;
  }
  if (conn->connecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    int error = 0;
    socklen_t len = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
    if (error != 0) {
      addresses_.erase(conn->origin);
      Fail(*conn,
           Unavailable(absl::StrCat("Failed to connect: ", std::strerror(error)), conn->origin));
      return;
    }
    conn->connecting = false;
    SetDeadline(*conn, conn->ex.deadline);
    Send(*conn);
    return;  // the answer comes with a later event
  }
  const uint64_t id = conn->ex.id;
  if ((events & EPOLLOUT) != 0 && conn->ex.iov_next < conn->ex.iov.size()) {
    Send(*conn);
    // Send may have failed the exchange, or sent it again on a new connection (which can
    // have the same fd and is still connecting).
    if (conns_[fd] == nullptr || conns_[fd]->ex.id != id || conns_[fd]->connecting) return;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) OnReadable(*conns_[fd]);
}

void PlainHttp1Pool::OnReadable(Conn& conn) {
  char* buffer = read_buffer_.get();
  while (true) {
    const ssize_t n = recv(conn.fd, buffer, kReadBytes, MSG_DONTWAIT);
    if (n > 0) {
      conn.answered = true;
      if (absl::Status s = conn.parser.Feed(buffer, static_cast<size_t>(n)); !s.ok()) {
        Fail(conn, s);
        return;
      }
      if (conn.parser.done()) {
        Complete(conn);
        return;
      }
      if (static_cast<size_t>(n) < kReadBytes) return;  // drained; saves a recv for EAGAIN
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n == 0) {
      absl::Status s = conn.parser.Eof(conn.answered);
      if (s.ok()) {
        Complete(conn);
      } else {
        Fail(conn, absl::UnavailableError(absl::StrCat(s.message(), " (", conn.origin, ")")));
      }
      return;
    }
    Fail(conn, Unavailable(absl::StrCat("Recv failure: ", std::strerror(errno)), conn.origin));
    return;
  }
}

void PlainHttp1Pool::Complete(Conn& conn) {
  HttpResponse response = std::move(conn.parser.response());
  const std::string& encoding = conn.parser.content_encoding();
  absl::StatusOr<HttpResponse> result = std::move(response);
  if (encoding == "gzip" || encoding == "x-gzip" || encoding == "deflate") {
    absl::StatusOr<std::string> body = Inflate(result->body, conn.parser.max_body(), false);
    if (!body.ok() && encoding == "deflate") {
      body = Inflate(result->body, conn.parser.max_body(), true);
    }
    if (body.ok()) {
      result->body = *std::move(body);
    } else {
      result = body.status();
    }
  }
  const uint64_t id = conn.ex.id;
  const int opened = conn.ex.opened;
  Release(conn);
  done_(id, std::move(result), opened);
}

void PlainHttp1Pool::Fail(Conn& conn, absl::Status status) {
  Exchange ex = std::move(conn.ex);
  const bool stale = conn.reused && !conn.answered;
  const size_t max_body = conn.parser.max_body();
  Close(conn);
  if (stale) {
    // A kept-alive connection the server had closed: once more, from the first byte, on a new
    // one.
    ex.iov.resize(1);
    AppendBody(*ex.request, &ex.iov);
    absl::StatusOr<Conn*> fresh =
        Connection(ex.target.origin, ex.target.host, ex.target.port, &ex.opened);
    if (fresh.ok()) {
      // Connection prefers another idle one: it may be stale too, and may be retried in turn.
      (*fresh)->ex = std::move(ex);
      Begin(**fresh, max_body);
      return;
    }
    status = fresh.status();
  }
  done_(ex.id, std::move(status), ex.opened);
}

void PlainHttp1Pool::Release(Conn& conn) {
  if (!conn.parser.keep_alive() || idle_count_ >= options_.max_idle_connections) {
    Close(conn);
    return;
  }
  busy_.erase(conn.ex.id);
  if (conn.has_deadline) deadlines_.erase({conn.deadline_key, &conn});
  conn.has_deadline = false;
  conn.ex = Exchange();
  conn.answered = false;
  Watch(conn, false);
  idle_[conn.origin].push_back(&conn);
  ++idle_count_;
}

void PlainHttp1Pool::Close(Conn& conn) {
  if (conn.has_deadline) deadlines_.erase({conn.deadline_key, &conn});
  if (conn.ex.id != 0) {
    auto it = busy_.find(conn.ex.id);
    if (it != busy_.end() && it->second == &conn) busy_.erase(it);
  } else {
    std::vector<Conn*>& idle = idle_[conn.origin];
    auto it = std::find(idle.begin(), idle.end(), &conn);
    if (it != idle.end()) {
      idle.erase(it);
      --idle_count_;
    }
  }
  const int fd = conn.fd;
  close(fd);  // leaves the epoll set with it
  conns_[fd].reset();
}

bool PlainHttp1Pool::Abort(uint64_t id) {
  auto it = busy_.find(id);
  if (it == busy_.end()) return false;
  Close(*it->second);
  return true;
}

PlainHttp1Pool::SteadyTime PlainHttp1Pool::NextDeadline() const {
  return deadlines_.empty() ? SteadyTime::max() : deadlines_.begin()->first;
}

void PlainHttp1Pool::ExpireDue(SteadyTime now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    Conn& conn = *deadlines_.begin()->second;
    const uint64_t id = conn.ex.id;
    const int opened = conn.ex.opened;
    absl::Status status = absl::DeadlineExceededError(absl::StrCat(
        "HTTP transport: Timeout was reached (",
        conn.connecting ? "connect timed out" : "no complete answer before the request's timeout",
        ", ", conn.origin, ")"));
    Close(conn);
    done_(id, std::move(status), opened);
  }
}

}  // namespace hb
