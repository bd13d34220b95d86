#include "http/curl_http_client.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "http/curl_easy_options.h"

namespace hb {

struct CurlMultiHttpClient::Shard {
  CurlMultiHttpClient* client = nullptr;
  uint32_t index = 0;
  CURLM* multi = nullptr;  // owned (cleaned up by ~CurlMultiHttpClient)
  // When libcurl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT) (steady clock: libcurl
  // keeps its own monotonic time); max() when it has no timeout pending. Loop thread only.
  std::chrono::steady_clock::time_point curl_due = std::chrono::steady_clock::time_point::max();
  // Transfers added to `multi` and not yet removed. Loop thread only.
  int active = 0;
};

struct CurlMultiHttpClient::Transfer {
  CallId id = 0;
  Shard* shard = nullptr;  // set while added to shard->multi
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  HttpRequest request;
  HttpCallback done;
  HttpResponse response;
  absl::Time submitted;
  size_t max_body_bytes = 0;
  // Set by WriteBody when the body passed max_body_bytes (libcurl then reports a write error).
  bool body_over_limit = false;
  char error[CURL_ERROR_SIZE] = {0};
  // Streaming request.body_parts (ReadBody, SeekBody): each part's size, the part being sent,
  // the offset in it and, for a file part, the open file.
  std::vector<curl_off_t> part_sizes;
  size_t part = 0;
  curl_off_t part_offset = 0;
  std::FILE* part_file = nullptr;

  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (header_list != nullptr) curl_slist_free_all(header_list);
    if (part_file != nullptr) std::fclose(part_file);
  }
};

namespace {

// epoll_event.data.u64 carries the shard index in the high half and the fd in the low half;
// the eventfd is marked with this shard index.
constexpr uint32_t kWakeIndex = 0xffffffffu;
// ... and PlainHttp1Pool's sockets with this one.
constexpr uint32_t kPlainIndex = 0xfffffffeu;
constexpr int kMaxShards = 16;

uint64_t EpollKey(uint32_t shard, int fd) {
  return (static_cast<uint64_t>(shard) << 32) | static_cast<uint32_t>(fd);
}

// ceil(total / parts), or 0 (no limit) when total is 0.
long PerShard(long total, int parts) { return total <= 0 ? 0 : (total + parts - 1) / parts; }

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<CurlMultiHttpClient::Transfer*>(user);
  if (transfer->response.body.size() + size * count > transfer->max_body_bytes) {
    transfer->body_over_limit = true;
    return 0;  // CURLE_WRITE_ERROR: libcurl stops reading
  }
  transfer->response.body.append(data, size * count);
  return size * count;
}

// CURLOPT_READFUNCTION over request.body_parts, in order.
size_t ReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<CurlMultiHttpClient::Transfer*>(user);
  const std::vector<HttpBodyPart>& parts = t->request.body_parts;
  const size_t room = size * count;
  while (t->part < parts.size()) {
    const HttpBodyPart& part = parts[t->part];
    size_t n = 0;
    if (part.file_path.empty()) {
      n = std::min(room, static_cast<size_t>(t->part_sizes[t->part] - t->part_offset));
      if (n > 0) std::memcpy(buffer, part.data->data() + t->part_offset, n);
    } else {
      if (t->part_file == nullptr) {
        t->part_file = std::fopen(part.file_path.c_str(), "rb");
        if (t->part_file == nullptr ||
            ::fseeko(t->part_file, static_cast<off_t>(t->part_offset), SEEK_SET) != 0) {
          return CURL_READFUNC_ABORT;
        }
      }
      n = std::fread(buffer, 1, room, t->part_file);
      if (n == 0 && std::ferror(t->part_file)) return CURL_READFUNC_ABORT;
    }
    t->part_offset += static_cast<curl_off_t>(n);
    if (n > 0) return n;
    if (t->part_file != nullptr) std::fclose(t->part_file);
    t->part_file = nullptr;
    t->part_offset = 0;
    ++t->part;
  }
  return 0;
}

// CURLOPT_SEEKFUNCTION over request.body_parts: libcurl rewinds a body to send it again (a
// reused connection that turned out closed, an HTTP/2 stream refused).
int SeekBody(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<CurlMultiHttpClient::Transfer*>(user);
  if (origin != SEEK_SET || offset < 0) return CURL_SEEKFUNC_CANTSEEK;
  if (t->part_file != nullptr) std::fclose(t->part_file);
  t->part_file = nullptr;
  t->part = 0;
  while (t->part < t->part_sizes.size() && offset >= t->part_sizes[t->part]) {
    offset -= t->part_sizes[t->part];
    ++t->part;
  }
  t->part_offset = t->part < t->part_sizes.size() ? offset : 0;
  return offset == 0 || t->part < t->part_sizes.size() ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL;
}

// Each part's size; kFailedPrecondition naming a file that cannot be read.
absl::StatusOr<std::vector<curl_off_t>> BodyPartSizes(const std::vector<HttpBodyPart>& parts) {
  std::vector<curl_off_t> sizes;
  sizes.reserve(parts.size());
  for (const HttpBodyPart& part : parts) {
    if (part.file_path.empty()) {
      sizes.push_back(part.data == nullptr ? 0 : static_cast<curl_off_t>(part.data->size()));
      continue;
    }
    struct stat st;
    if (::stat(part.file_path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("HTTP transport: cannot read request body file ", part.file_path, ": ",
                       std::strerror(errno)));
    }
    sizes.push_back(static_cast<curl_off_t>(st.st_size));
  }
  return sizes;
}

// Joins `parts` into `body` when they are all in memory and together smaller than
// kStreamedBodyMinBytes: such a body goes out in one piece (CURLOPT_POSTFIELDS) rather than
// through the read callback and its 64 KiB upload buffer per transfer.
constexpr size_t kStreamedBodyMinBytes = 64 << 10;
void JoinSmallBody(HttpRequest& req) {
  size_t total = 0;
  for (const HttpBodyPart& part : req.body_parts) {
    if (!part.file_path.empty()) return;
    if (part.data != nullptr) total += part.data->size();
    if (total >= kStreamedBodyMinBytes) return;
  }
  req.body.clear();
  req.body.reserve(total);
  for (const HttpBodyPart& part : req.body_parts) {
    if (part.data != nullptr) req.body += *part.data;
  }
  req.body_parts.clear();
}

size_t WriteHeader(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<CurlMultiHttpClient::Transfer*>(user);
  absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) {
    // A new status line (after 100 Continue or a redirect): headers start over.
    transfer->response.headers.clear();
    return size * count;
  }
  size_t colon = line.find(':');
  if (colon == absl::string_view::npos) return size * count;
  std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, colon)));
  std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  transfer->response.headers.emplace_back(std::move(name), std::move(value));
  return size * count;
}

absl::Status CurlError(CURLcode code, const char* detail) {
  std::string message =
      absl::StrCat("HTTP transport: ", curl_easy_strerror(code),
                   detail != nullptr && detail[0] != '\0' ? absl::StrCat(" (", detail, ")") : "");
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(message);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return absl::InvalidArgumentError(message);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      return absl::FailedPreconditionError(message);
    default:
      // Refused, reset, DNS, empty reply, partial reply, TLS handshake: try again later.
      return absl::UnavailableError(message);
  }
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The request's method and body on `easy`: GET, a body streamed from its parts (ReadBody,
// SeekBody; their sizes in t.part_sizes) or one in memory. Errors: BodyPartSizes'.
absl::Status SetBody(CURL* easy, CurlMultiHttpClient::Transfer& t) {
  const HttpRequest& req = t.request;
  if (req.method == "GET") {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    return absl::OkStatus();
  }
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  if (req.body_parts.empty()) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<curl_off_t>> sizes = BodyPartSizes(req.body_parts);
  if (!sizes.ok()) return sizes.status();
  t.part_sizes = *std::move(sizes);
  curl_off_t size = 0;
  for (curl_off_t part : t.part_sizes) size += part;
  curl_easy_setopt(easy, CURLOPT_READFUNCTION, &ReadBody);
  curl_easy_setopt(easy, CURLOPT_READDATA, &t);
  curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, &SeekBody);
  curl_easy_setopt(easy, CURLOPT_SEEKDATA, &t);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, size);
  return absl::OkStatus();
}

// The request's headers on `easy` (owned by t.header_list), and the callbacks that fill
// t.response.
void SetHeadersAndCallbacks(CURL* easy, CurlMultiHttpClient::Transfer& t) {
  for (const auto& [name, value] : t.request.headers) {
    t.header_list = curl_slist_append(t.header_list, absl::StrCat(name, ": ", value).c_str());
  }
  // libcurl 7.88 sends "Expect: 100-continue" for bodies over 1 KiB and then waits up to a
  // second for a server that may never answer it; grader prompts are always bigger.
  t.header_list = curl_slist_append(t.header_list, "Expect:");
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t.header_list);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, &t);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t.error);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> CurlMultiHttpClient::Create(
    const CurlHttpClientOptions& options) {
  GlobalInit();
  std::unique_ptr<CurlMultiHttpClient> client(new CurlMultiHttpClient(options));
  if (client->epoll_fd_ < 0 || client->wake_fd_ < 0) {
    return absl::InternalError(absl::StrCat("epoll_create1/eventfd: ", std::strerror(errno)));
  }
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = EpollKey(kWakeIndex, client->wake_fd_);
  if (epoll_ctl(client->epoll_fd_, EPOLL_CTL_ADD, client->wake_fd_, &wake) != 0) {
    return absl::InternalError(absl::StrCat("epoll_ctl(eventfd): ", std::strerror(errno)));
  }
  const int in_flight = std::max(1, options.max_in_flight);
  const int shards =
      options.transfers_per_multi <= 0
          ? 1
          : std::clamp((in_flight + options.transfers_per_multi - 1) / options.transfers_per_multi,
                       1, kMaxShards);
  const long cached =
      options.max_cached_connections > 0 ? options.max_cached_connections : in_flight;
  for (int i = 0; i < shards; ++i) {
    auto shard = std::make_unique<Shard>();
    shard->client = client.get();
    shard->index = static_cast<uint32_t>(i);
    shard->multi = curl_multi_init();
    if (shard->multi == nullptr) return absl::InternalError("curl_multi_init failed");
    CURLM* multi = shard->multi;
    client->shards_.push_back(std::move(shard));
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      PerShard(std::max(0, options.max_host_connections), shards));
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, PerShard(cached, shards));
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                      static_cast<long>(std::max(1, options.max_concurrent_streams)));
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &CurlMultiHttpClient::OnSocket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, client->shards_.back().get());
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &CurlMultiHttpClient::OnCurlTimer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, client->shards_.back().get());
  }
  if (options.plain_http1 && !PlainHttp1Pool::ProxyInEnvironment()) {
    PlainHttp1Options plain;
    plain.connect_timeout = std::chrono::milliseconds(
        std::max<int64_t>(1, absl::ToInt64Milliseconds(options.connect_timeout)));
    plain.user_agent = options.user_agent;
    plain.max_idle_connections = static_cast<size_t>(cached);
    client->plain_ = std::make_unique<PlainHttp1Pool>(
        client->epoll_fd_, kPlainIndex, plain,
        [c = client.get()](uint64_t id, absl::StatusOr<HttpResponse> result, int opened) {
          c->FinishPlain(id, std::move(result), opened);
        });
  }
  client->thread_ = std::thread([c = client.get()] { c->Loop(); });
  return client;
}

CurlMultiHttpClient::CurlMultiHttpClient(const CurlHttpClientOptions& options)
    : options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      epoll_fd_(epoll_create1(EPOLL_CLOEXEC)),
      wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

CurlMultiHttpClient::~CurlMultiHttpClient() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  // The loop is gone: finish everything here so no caller waits forever.
  std::vector<std::unique_ptr<Transfer>> leftovers;
  std::vector<absl::AnyInvocable<void()>> timers;
  {
    absl::MutexLock lock(&mu_);
    for (auto& t : submitted_) leftovers.push_back(std::move(t));
    submitted_.clear();
    for (auto& [key, fn] : timers_) timers.push_back(std::move(fn));
    timers_.clear();
    timer_due_.clear();
  }
  for (auto& t : waiting_) leftovers.push_back(std::move(t));
  waiting_.clear();
  for (auto& [id, t] : active_) {
    if (t->shard != nullptr) curl_multi_remove_handle(t->shard->multi, t->easy);
    leftovers.push_back(std::move(t));
  }
  active_.clear();
  plain_.reset();  // closes its sockets; its exchanges are among the leftovers
  for (auto& t : leftovers) {
    HttpCallback done = std::move(t->done);
    t.reset();
    done(absl::CancelledError("HTTP client shut down"));
  }
  for (auto& fn : timers) fn();
  for (void* easy : spare_easies_) curl_easy_cleanup(easy);
  // Closing cached connections calls OnSocket, which needs epoll_fd_ still open.
  for (auto& shard : shards_) {
    if (shard->multi != nullptr) curl_multi_cleanup(shard->multi);
  }
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool CurlMultiHttpClient::NeedsWakeLocked() {
  // The loop thread re-reads the queues before it sleeps, and one outstanding eventfd write
  // is enough to make the loop look.
  if (wake_pending_ || std::this_thread::get_id() == loop_thread_id_) return false;
  wake_pending_ = true;
  return true;
}

void CurlMultiHttpClient::Wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  // EAGAIN only when the counter is saturated, which still wakes the loop.
  if (write(wake_fd_, &one, sizeof(one)) < 0) {
  }
}

HttpClient::CallId CurlMultiHttpClient::Post(HttpRequest request, HttpCallback done) {
  auto transfer = std::make_unique<Transfer>();
  transfer->request = std::move(request);
  transfer->done = std::move(done);
  transfer->submitted = clock_.Now();
  CallId id;
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    id = ++next_call_id_;
    transfer->id = id;
    if (!stop_) {
      submitted_.push_back(std::move(transfer));
      queued_.fetch_add(1, std::memory_order_relaxed);
      wake = NeedsWakeLocked();
    }
  }
  if (transfer != nullptr) {
    transfer->done(absl::CancelledError("HTTP client shut down"));
    return id;
  }
  if (wake) Wake();
  return id;
}

void CurlMultiHttpClient::Cancel(CallId id) {
  if (id == 0) return;
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    cancelled_.push_back(id);
    wake = NeedsWakeLocked();
  }
  if (wake) Wake();
}

Scheduler::TimerId CurlMultiHttpClient::Schedule(absl::Duration delay,
                                                 absl::AnyInvocable<void()> fn) {
  TimerId id;
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    id = ++next_timer_id_;
    absl::Time due = clock_.Now() + std::max(delay, absl::ZeroDuration());
    auto it = timers_.emplace(std::make_pair(due, id), std::move(fn)).first;
    timer_due_[id] = due;
    // Only a new earliest timer can make the loop wake up sooner than it planned to.
    if (it == timers_.begin()) wake = NeedsWakeLocked();
  }
  if (wake) Wake();
  return id;
}

bool CurlMultiHttpClient::CancelTimer(TimerId id) {
  absl::AnyInvocable<void()> dropped;  // destroyed outside the lock
  absl::MutexLock lock(&mu_);
  auto it = timer_due_.find(id);
  if (it == timer_due_.end()) return false;
  auto node = timers_.find(std::make_pair(it->second, id));
  if (node != timers_.end()) {
    dropped = std::move(node->second);
    timers_.erase(node);
  }
  timer_due_.erase(it);
  return true;
}

CurlHttpClientStats CurlMultiHttpClient::stats() const {
  CurlHttpClientStats s;
  s.requests_started = requests_started_.load(std::memory_order_relaxed);
  s.requests_completed = requests_completed_.load(std::memory_order_relaxed);
  s.connections_opened = connections_opened_.load(std::memory_order_relaxed);
  s.in_flight = in_flight_.load(std::memory_order_relaxed);
  s.queued = queued_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  s.timers_pending = static_cast<int64_t>(timers_.size());
  return s;
}

int CurlMultiHttpClient::OnSocket(void* /*easy*/, int fd, int what, void* shard_ptr,
                                  void* /*socket_data*/) {
  auto* shard = static_cast<Shard*>(shard_ptr);
  CurlMultiHttpClient* client = shard->client;
  if (fd < 0) return 0;
  const size_t index = static_cast<size_t>(fd);
  if (index >= client->parked_.size()) client->parked_.resize(index + 1, 0);
  if (what == CURL_POLL_REMOVE) {
    // Most such sockets are keep-alive connections going idle until the next request reuses
    // them: leave them in the epoll set (saving a syscall per request) and drop them from it
    // only if they become ready while idle (see Loop). A socket libcurl closes leaves the set
    // by itself.
    client->parked_[index] = 1;
    return 0;
  }
  client->parked_[index] = 0;
  epoll_event ev{};
  ev.data.u64 = EpollKey(shard->index, fd);
  if ((what & CURL_POLL_IN) != 0) ev.events |= EPOLLIN;
  if ((what & CURL_POLL_OUT) != 0) ev.events |= EPOLLOUT;
  // Usually registered already (a reused connection); ENOENT for a new socket, or one that
  // was closed and whose number came back.
  if (epoll_ctl(client->epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
    epoll_ctl(client->epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return 0;
}

int CurlMultiHttpClient::OnCurlTimer(void* /*multi*/, long timeout_ms, void* shard_ptr) {
  auto* shard = static_cast<Shard*>(shard_ptr);
  shard->curl_due = timeout_ms < 0
                        ? std::chrono::steady_clock::time_point::max()
                        : std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

void CurlMultiHttpClient::StartPlain(std::unique_ptr<Transfer> t) {
  Transfer& transfer = *t;
  const size_t max_body = t->request.max_response_body_bytes > 0
                              ? t->request.max_response_body_bytes
                              : options_.max_response_body_bytes;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max<int64_t>(
                                             1, absl::ToInt64Milliseconds(t->request.timeout)));
  requests_started_.fetch_add(1, std::memory_order_relaxed);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  const CallId id = t->id;
  active_.emplace(id, std::move(t));
  // The pool may finish the exchange (FinishPlain) before Start returns.
  absl::Status started = plain_->Start(id, transfer.request, max_body, deadline);
  if (!started.ok()) FinishPlain(id, std::move(started), 0);
}

void CurlMultiHttpClient::FinishPlain(CallId id, absl::StatusOr<HttpResponse> result,
                                      int connections_opened) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  std::unique_ptr<Transfer> t = std::move(it->second);
  active_.erase(it);
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  connections_opened_.fetch_add(connections_opened, std::memory_order_relaxed);
  if (result.ok()) result->latency = clock_.Now() - t->submitted;
  Finish(std::move(t), std::move(result));
}

void CurlMultiHttpClient::AddHandle(std::unique_ptr<Transfer> t) {
  if (plain_ != nullptr && PlainHttp1Pool::Accepts(t->request)) {
    StartPlain(std::move(t));
    return;
  }
  CURL* easy = nullptr;
  if (spare_easies_.empty()) {
    easy = curl_easy_init();
  } else {
    easy = spare_easies_.back();
    spare_easies_.pop_back();
  }
  if (easy == nullptr) {
    Finish(std::move(t), absl::InternalError("curl_easy_init failed"));
    return;
  }
  t->easy = easy;
  if (!t->request.body_parts.empty()) JoinSmallBody(t->request);
  curl_easy_setopt(easy, CURLOPT_URL, t->request.url.c_str());
  if (absl::Status body = SetBody(easy, *t); !body.ok()) {
    Finish(std::move(t), std::move(body));
    return;
  }
  SetHeadersAndCallbacks(easy, *t);
  t->max_body_bytes = t->request.max_response_body_bytes > 0 ? t->request.max_response_body_bytes
                                                             : options_.max_response_body_bytes;
  SetCurlConnectionOptions(easy, options_, t->request);
  // The multi handle with the fewest transfers (the first on ties).
  Shard* shard = shards_.front().get();
  for (auto& s : shards_) {
    if (s->active < shard->active) shard = s.get();
  }
  CURLMcode rc = curl_multi_add_handle(shard->multi, easy);
  if (rc != CURLM_OK) {
    Finish(std::move(t),
           absl::InternalError(absl::StrCat("curl_multi_add_handle: ", curl_multi_strerror(rc))));
    return;
  }
  t->shard = shard;
  ++shard->active;
  requests_started_.fetch_add(1, std::memory_order_relaxed);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  CallId id = t->id;
  active_.emplace(id, std::move(t));
}

void CurlMultiHttpClient::Finish(std::unique_ptr<Transfer> t, absl::StatusOr<HttpResponse> result) {
  HttpCallback done = std::move(t->done);
  if (t->easy != nullptr) {
    // Back to its defaults (its connection stays in the multi's cache) for the next request.
    curl_easy_reset(t->easy);
    spare_easies_.push_back(std::exchange(t->easy, nullptr));
  }
  t.reset();
  requests_completed_.fetch_add(1, std::memory_order_relaxed);
  done(std::move(result));
}

void CurlMultiHttpClient::CancelTransfer(CallId id) {
  auto it = active_.find(id);
  if (it != active_.end()) {
    std::unique_ptr<Transfer> t = std::move(it->second);
    active_.erase(it);
    if (t->shard != nullptr) {
      curl_multi_remove_handle(t->shard->multi, t->easy);
      --t->shard->active;
    } else if (plain_ != nullptr) {
      plain_->Abort(id);
    }
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    Finish(std::move(t), absl::CancelledError("HTTP request cancelled"));
    return;
  }
  for (auto w = waiting_.begin(); w != waiting_.end(); ++w) {
    if ((*w)->id == id) {
      std::unique_ptr<Transfer> t = std::move(*w);
      waiting_.erase(w);
      queued_.fetch_sub(1, std::memory_order_relaxed);
      Finish(std::move(t), absl::CancelledError("HTTP request cancelled"));
      return;
    }
  }
}

void CurlMultiHttpClient::StartWaiting() {
  const size_t limit = static_cast<size_t>(std::max(1, options_.max_in_flight));
  while (!waiting_.empty() && active_.size() < limit) {
    std::unique_ptr<Transfer> t = std::move(waiting_.front());
    waiting_.pop_front();
    queued_.fetch_sub(1, std::memory_order_relaxed);
    AddHandle(std::move(t));
  }
}

void CurlMultiHttpClient::DrainCompleted(Shard& shard) {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(shard.multi, &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;
    Transfer* raw = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    curl_multi_remove_handle(shard.multi, easy);
    --shard.active;
    auto it = active_.find(raw->id);
    if (it == active_.end()) continue;
    std::unique_ptr<Transfer> t = std::move(it->second);
    active_.erase(it);
    long connects = 0;
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    connections_opened_.fetch_add(connects, std::memory_order_relaxed);
    if (t->body_over_limit) {
      Finish(std::move(t), BodyOverLimitError(t->max_body_bytes));
      continue;
    }
    if (code != CURLE_OK) {
      absl::Status status = CurlError(code, t->error);
      Finish(std::move(t), status);
      continue;
    }
    long http_status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http_status);
    HttpResponse response = std::move(t->response);
    response.status_code = static_cast<int>(http_status);
    response.latency = clock_.Now() - t->submitted;
    Finish(std::move(t), std::move(response));
  }
}

void CurlMultiHttpClient::RunDueTimers() {
  while (true) {
    absl::AnyInvocable<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      if (timers_.empty()) return;
      auto first = timers_.begin();
      if (first->first.first > clock_.Now()) return;
      fn = std::move(first->second);
      timer_due_.erase(first->first.second);
      timers_.erase(first);
    }
    fn();
  }
}

bool CurlMultiHttpClient::TakeQueues() {
  std::vector<std::unique_ptr<Transfer>> submitted;
  std::vector<CallId> cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return false;
    submitted.swap(submitted_);
    cancelled.swap(cancelled_);
    // Callers from now on must write the eventfd again (the loop has consumed it already).
    wake_pending_ = false;
  }
  for (auto& t : submitted) waiting_.push_back(std::move(t));
  for (CallId id : cancelled) CancelTransfer(id);
  return true;
}

void CurlMultiHttpClient::SocketAction(Shard& shard, int fd, int events) {
  int running = 0;
  curl_multi_socket_action(shard.multi, fd, events, &running);
  DrainCompleted(shard);
}

void CurlMultiHttpClient::Loop() {
  {
    absl::MutexLock lock(&mu_);
    loop_thread_id_ = std::this_thread::get_id();
  }
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  while (true) {
    if (!TakeQueues()) return;
    StartWaiting();
    const auto now = std::chrono::steady_clock::now();
    for (auto& shard : shards_) {
      if (shard->curl_due <= now) {
        shard->curl_due = std::chrono::steady_clock::time_point::max();
        SocketAction(*shard, CURL_SOCKET_TIMEOUT, 0);
      }
    }
    if (plain_ != nullptr) plain_->ExpireDue(now);
    StartWaiting();
    RunDueTimers();

    // Sleep until a socket is ready, the eventfd is written, libcurl's timeout or the
    // earliest timer; at most a second.
    int64_t wait_ms = 1000;
    auto curl_due = std::chrono::steady_clock::time_point::max();
    for (auto& shard : shards_) curl_due = std::min(curl_due, shard->curl_due);
    if (plain_ != nullptr) curl_due = std::min(curl_due, plain_->NextDeadline());
    if (curl_due != std::chrono::steady_clock::time_point::max()) {
      auto until = curl_due - std::chrono::steady_clock::now();
      wait_ms = std::min<int64_t>(
          wait_ms,
          std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(until).count()));
    }
    absl::Time next_timer = absl::InfiniteFuture();
    {
      absl::MutexLock lock(&mu_);
      if (!timers_.empty()) next_timer = timers_.begin()->first.first;
      if (!submitted_.empty() || !cancelled_.empty() || stop_) wait_ms = 0;
    }
    if (next_timer != absl::InfiniteFuture()) {
      absl::Duration until = next_timer - clock_.Now();
      int64_t timer_ms = until <= absl::ZeroDuration()
                             ? 0
                             : static_cast<int64_t>(std::ceil(absl::ToDoubleMilliseconds(until)));
      wait_ms = std::min(wait_ms, timer_ms);
    }
    int n = epoll_wait(epoll_fd_, events, kMaxEvents, static_cast<int>(wait_ms));
    for (int i = 0; i < n; ++i) {
      const uint32_t index = static_cast<uint32_t>(events[i].data.u64 >> 32);
      const int fd = static_cast<int>(static_cast<uint32_t>(events[i].data.u64));
      if (index == kWakeIndex) {
        uint64_t count = 0;
        if (read(wake_fd_, &count, sizeof(count)) < 0) {
          // EAGAIN: already consumed.
        }
        continue;
      }
      if (index == kPlainIndex) {
        plain_->OnEvent(fd, events[i].events);
        continue;
      }
      if (static_cast<size_t>(fd) < parked_.size() && parked_[fd] != 0) {
        // An idle connection closed or written to by the server: libcurl notices when it next
        // tries to reuse it; stop watching it meanwhile (epoll is level-triggered).
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        parked_[fd] = 0;
        continue;
      }
      // As libcurl's own poll does: an error or hang-up makes the socket readable and
      // writable, so the transfer reads or writes and meets the error itself.
      const uint32_t e = events[i].events;
      int action = 0;
      if ((e & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) action |= CURL_CSELECT_IN;
      if ((e & (EPOLLOUT | EPOLLERR | EPOLLHUP)) != 0) action |= CURL_CSELECT_OUT;
      SocketAction(*shards_[index], fd, action);
    }
  }
}

}  // namespace hb
