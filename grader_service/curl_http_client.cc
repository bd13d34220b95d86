#include "grader_service/curl_http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hb {

struct CurlMultiHttpClient::Transfer {
  CallId id = 0;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  HttpRequest request;
  HttpCallback done;
  HttpResponse response;
  absl::Time submitted;
  char error[CURL_ERROR_SIZE] = {0};

  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (header_list != nullptr) curl_slist_free_all(header_list);
  }
};

namespace {

CURLM* Multi(void* p) { return static_cast<CURLM*>(p); }

size_t WriteBody(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<CurlMultiHttpClient::Transfer*>(user);
  transfer->response.body.append(data, size * count);
  return size * count;
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

}  // namespace

absl::StatusOr<std::unique_ptr<CurlMultiHttpClient>> CurlMultiHttpClient::Create(
    const CurlHttpClientOptions& options) {
  GlobalInit();
  std::unique_ptr<CurlMultiHttpClient> client(new CurlMultiHttpClient(options));
  if (client->multi_ == nullptr) return absl::InternalError("curl_multi_init failed");
  CURLM* multi = Multi(client->multi_);
  const long in_flight = std::max(1, options.max_in_flight);
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    static_cast<long>(std::max(0, options.max_host_connections)));
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS,
                    static_cast<long>(options.max_cached_connections > 0
                                          ? options.max_cached_connections
                                          : in_flight));
  curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS,
                    static_cast<long>(std::max(1, options.max_concurrent_streams)));
  client->thread_ = std::thread([c = client.get()] { c->Loop(); });
  return client;
}

CurlMultiHttpClient::CurlMultiHttpClient(const CurlHttpClientOptions& options)
    : options_(options),
      clock_(options.clock != nullptr ? *options.clock : Clock::Real()),
      multi_(curl_multi_init()) {}

CurlMultiHttpClient::~CurlMultiHttpClient() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (multi_ != nullptr) curl_multi_wakeup(Multi(multi_));
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
    curl_multi_remove_handle(Multi(multi_), t->easy);
    leftovers.push_back(std::move(t));
  }
  active_.clear();
  for (auto& t : leftovers) {
    HttpCallback done = std::move(t->done);
    t.reset();
    done(absl::CancelledError("HTTP client shut down"));
  }
  for (auto& fn : timers) fn();
  if (multi_ != nullptr) curl_multi_cleanup(Multi(multi_));
}

HttpClient::CallId CurlMultiHttpClient::Post(HttpRequest request, HttpCallback done) {
  auto transfer = std::make_unique<Transfer>();
  transfer->request = std::move(request);
  transfer->done = std::move(done);
  transfer->submitted = clock_.Now();
  CallId id;
  {
    absl::MutexLock lock(&mu_);
    id = ++next_call_id_;
    transfer->id = id;
    if (!stop_) {
      submitted_.push_back(std::move(transfer));
      ++stats_.queued;
    }
  }
  if (transfer != nullptr) {
    transfer->done(absl::CancelledError("HTTP client shut down"));
    return id;
  }
  curl_multi_wakeup(Multi(multi_));
  return id;
}

void CurlMultiHttpClient::Cancel(CallId id) {
  if (id == 0) return;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    cancelled_.push_back(id);
  }
  curl_multi_wakeup(Multi(multi_));
}

Scheduler::TimerId CurlMultiHttpClient::Schedule(absl::Duration delay,
                                                 absl::AnyInvocable<void()> fn) {
  TimerId id;
  {
    absl::MutexLock lock(&mu_);
    id = ++next_timer_id_;
    absl::Time due = clock_.Now() + std::max(delay, absl::ZeroDuration());
    timers_.emplace(std::make_pair(due, id), std::move(fn));
    timer_due_[id] = due;
  }
  curl_multi_wakeup(Multi(multi_));
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
  absl::MutexLock lock(&mu_);
  CurlHttpClientStats s = stats_;
  s.timers_pending = static_cast<int64_t>(timers_.size());
  return s;
}

void CurlMultiHttpClient::AddHandle(std::unique_ptr<Transfer> t) {
  CURL* easy = curl_easy_init();
  if (easy == nullptr) {
    Finish(std::move(t), absl::InternalError("curl_easy_init failed"));
    return;
  }
  t->easy = easy;
  const HttpRequest& req = t->request;
  curl_easy_setopt(easy, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  for (const auto& [name, value] : req.headers) {
    t->header_list = curl_slist_append(t->header_list, absl::StrCat(name, ": ", value).c_str());
  }
  // libcurl 7.88 sends "Expect: 100-continue" for bodies over 1 KiB and then waits up to a
  // second for a server that may never answer it; grader prompts are always bigger.
  t->header_list = curl_slist_append(t->header_list, "Expect:");
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->header_list);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, t.get());
  curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  if (absl::StartsWithIgnoreCase(req.url, "https://")) {
    // Wait for a multiplexable connection instead of opening a new one per request.
    curl_easy_setopt(easy, CURLOPT_PIPEWAIT, 1L);
  }
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options_.verify_tls ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options_.verify_tls ? 2L : 0L);
  if (!options_.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(easy, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  int64_t timeout_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(req.timeout));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  CURLMcode rc = curl_multi_add_handle(Multi(multi_), easy);
  if (rc != CURLM_OK) {
    Finish(std::move(t), absl::InternalError(absl::StrCat("curl_multi_add_handle: ",
                                                          curl_multi_strerror(rc))));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.requests_started;
    ++stats_.in_flight;
  }
  CallId id = t->id;
  active_.emplace(id, std::move(t));
}

void CurlMultiHttpClient::Finish(std::unique_ptr<Transfer> t,
                                 absl::StatusOr<HttpResponse> result) {
  HttpCallback done = std::move(t->done);
  t.reset();  // frees the easy handle (its connection stays in the multi's cache)
  {
    absl::MutexLock lock(&mu_);
    ++stats_.requests_completed;
  }
  done(std::move(result));
}

void CurlMultiHttpClient::CancelTransfer(CallId id) {
  auto it = active_.find(id);
  if (it != active_.end()) {
    std::unique_ptr<Transfer> t = std::move(it->second);
    active_.erase(it);
    curl_multi_remove_handle(Multi(multi_), t->easy);
    {
      absl::MutexLock lock(&mu_);
      --stats_.in_flight;
    }
    Finish(std::move(t), absl::CancelledError("HTTP request cancelled"));
    return;
  }
  for (auto w = waiting_.begin(); w != waiting_.end(); ++w) {
    if ((*w)->id == id) {
      std::unique_ptr<Transfer> t = std::move(*w);
      waiting_.erase(w);
      {
        absl::MutexLock lock(&mu_);
        --stats_.queued;
      }
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
    {
      absl::MutexLock lock(&mu_);
      --stats_.queued;
    }
    AddHandle(std::move(t));
  }
}

void CurlMultiHttpClient::DrainCompleted() {
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(Multi(multi_), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* easy = msg->easy_handle;
    CURLcode code = msg->data.result;
    Transfer* raw = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    curl_multi_remove_handle(Multi(multi_), easy);
    auto it = active_.find(raw->id);
    if (it == active_.end()) continue;
    std::unique_ptr<Transfer> t = std::move(it->second);
    active_.erase(it);
    long connects = 0;
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects);
    {
      absl::MutexLock lock(&mu_);
      --stats_.in_flight;
      stats_.connections_opened += connects;
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

void CurlMultiHttpClient::Loop() {
  CURLM* multi = Multi(multi_);
  while (true) {
    std::vector<std::unique_ptr<Transfer>> submitted;
    std::vector<CallId> cancelled;
    absl::Time next_timer = absl::InfiniteFuture();
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      submitted.swap(submitted_);
      cancelled.swap(cancelled_);
    }
    for (auto& t : submitted) waiting_.push_back(std::move(t));
    for (CallId id : cancelled) CancelTransfer(id);
    StartWaiting();
    int running = 0;
    curl_multi_perform(multi, &running);
    DrainCompleted();
    StartWaiting();
    RunDueTimers();

    long curl_timeout_ms = -1;
    curl_multi_timeout(multi, &curl_timeout_ms);
    int64_t wait_ms = 1000;
    if (curl_timeout_ms >= 0) wait_ms = std::min<int64_t>(wait_ms, curl_timeout_ms);
    {
      absl::MutexLock lock(&mu_);
      if (!timers_.empty()) next_timer = timers_.begin()->first.first;
      if (!submitted_.empty() || !cancelled_.empty() || stop_) wait_ms = 0;
    }
    if (next_timer != absl::InfiniteFuture()) {
      absl::Duration until = next_timer - clock_.Now();
      int64_t timer_ms =
          until <= absl::ZeroDuration()
              ? 0
              : static_cast<int64_t>(std::ceil(absl::ToDoubleMilliseconds(until)));
      wait_ms = std::min(wait_ms, timer_ms);
    }
    if (wait_ms > 0) {
      curl_multi_poll(multi, nullptr, 0, static_cast<int>(wait_ms), nullptr);
    }
  }
}

}  // namespace hb
