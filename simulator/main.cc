// hb-llm-sim: an OpenAI-compatible chat-completions simulator (see simulator/README.md).
//
// Transport only: N libevent loops (one per --threads) accept on one listening socket, hand
// each request to hb::sim::Simulator, and carry out its SimAction. Delays are evtimers, never a
// sleeping thread, so thousands of slow requests cost a few KB each.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cli/command_line.h"
#include "cli/http_limit_flags.h"
#include "common/base/clock.h"
#include "common/base/host_port.h"
#include "common/base/json.h"
#include "common/base/logging.h"
#include "common/base/process.h"
#include "event2/buffer.h"
#include "event2/bufferevent.h"
#include "event2/event.h"
#include "event2/http.h"
#include "event2/keyvalq_struct.h"
#include "event2/thread.h"
#include "http/bounded_evhttp.h"
#include "simulator/sim_core.h"

namespace hb::sim {
namespace {

class RequestLog {
 public:
  bool Open(const std::string& path) {
    file_ = std::fopen(path.c_str(), "a");
    return file_ != nullptr;
  }
  ~RequestLog() {
    if (file_ != nullptr) std::fclose(file_);
  }
  void Write(const std::string& line) {
    if (file_ == nullptr) return;
    absl::MutexLock lock(&mu_);
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fputc('\n', file_);
    std::fflush(file_);
  }

 private:
  absl::Mutex mu_;
  std::FILE* file_ = nullptr;
};

struct Server {
  Simulator* sim;
  RequestLog* log;
};

// A request answered later (delay, reset) or never (hang). Owned by itself: freed when the
// timer fires or the connection closes, whichever is first.
struct Pending {
  Server* server;
  evhttp_request* req;
  evhttp_connection* conn;
  event* timer = nullptr;
  SimAction action;
};

void SendReply(evhttp_request* req, const SimAction& action) {
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  for (const auto& [name, value] : action.headers) {
    evhttp_add_header(out, name.c_str(), value.c_str());
  }
  evbuffer_add(evhttp_request_get_output_buffer(req), action.body.data(), action.body.size());
  evhttp_send_reply(req, action.status, nullptr, nullptr);
}

void OnConnectionClosed(evhttp_connection* /*conn*/, void* arg) {
  auto* pending = static_cast<Pending*>(arg);
  if (pending->timer != nullptr) event_free(pending->timer);
  // When the client went away, libevent detaches the unanswered request from the connection
  // and leaves it to us; when the server shuts down, the connection frees it itself.
  if (evhttp_request_get_connection(pending->req) == nullptr) {
    evhttp_request_free(pending->req);
  }
  pending->server->sim->AddInFlight(-1);
  delete pending;
}

evutil_socket_t ConnectionFd(evhttp_connection* conn) {
  bufferevent* bev = evhttp_connection_get_bufferevent(conn);
  return bev != nullptr ? bufferevent_getfd(bev) : -1;
}

// libevent does not read from a connection while its request waits for our reply, so it
// cannot notice that a client gave up on a hanging request. Peek at the socket once a second
// instead, and drop the connection when the peer has closed it.
void OnHangCheck(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* pending = static_cast<Pending*>(arg);
  const evutil_socket_t fd = ConnectionFd(pending->conn);
  char byte;
  const ssize_t n = fd < 0 ? 0 : recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  const bool alive =
      n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  if (alive) return;
  event_free(pending->timer);
  evhttp_connection_set_closecb(pending->conn, nullptr, nullptr);
  evhttp_connection_free(pending->conn);  // also frees the request
  pending->server->sim->AddInFlight(-1);
  delete pending;
}

void OnTimer(evutil_socket_t /*fd*/, short /*what*/, void* arg) {
  auto* pending = static_cast<Pending*>(arg);
  event_free(pending->timer);
  pending->timer = nullptr;
  evhttp_connection_set_closecb(pending->conn, nullptr, nullptr);
  if (pending->action.kind == SimAction::Kind::kReset) {
    const evutil_socket_t fd = ConnectionFd(pending->conn);
    if (fd >= 0) {
      linger lin{1, 0};  // close() then sends RST: the client sees a reset, not a clean EOF
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin));
    }
    evhttp_connection_free(pending->conn);
  } else {
    SendReply(pending->req, pending->action);
  }
  pending->server->sim->AddInFlight(-1);
  delete pending;
}

const char* MethodName(evhttp_cmd_type cmd) {
  switch (cmd) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_OPTIONS:
      return "OPTIONS";
    default:
      return "OTHER";
  }
}

void OnRequest(evhttp_request* req, void* arg) {
  auto* server = static_cast<Server*>(arg);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(req);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  const char* auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
  const char* content_type =
      evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
  evbuffer* in = evhttp_request_get_input_buffer(req);
  const size_t size = evbuffer_get_length(in);
  const char* data = size == 0 ? "" : reinterpret_cast<const char*>(evbuffer_pullup(in, -1));

  SimHttpRequest request;
  request.method = MethodName(evhttp_request_get_command(req));
  request.path = path == nullptr || *path == '\0' ? "/" : path;
  request.authorization = auth == nullptr ? "" : auth;
  request.content_type = content_type == nullptr ? "" : content_type;
  request.body = absl::string_view(data, size);
  const evkeyvalq* headers = evhttp_request_get_input_headers(req);
  for (const evkeyval* header = headers->tqh_first; header != nullptr;
       header = header->next.tqe_next) {
    request.headers.emplace_back(header->key, header->value);
  }
  SimAction action = server->sim->Handle(request);
  if (action.is_chat) server->log->Write(action.log_line);

  if (action.kind == SimAction::Kind::kReply && action.delay <= absl::ZeroDuration()) {
    SendReply(req, action);
    return;
  }
  auto* pending =
      new Pending{server, req, evhttp_request_get_connection(req), nullptr, std::move(action)};
  server->sim->AddInFlight(1);
  evhttp_connection_set_closecb(pending->conn, OnConnectionClosed, pending);
  event_base* base = evhttp_connection_get_base(pending->conn);
  if (pending->action.kind == SimAction::Kind::kHang) {
    pending->timer = event_new(base, -1, EV_PERSIST, OnHangCheck, pending);
    timeval period{1, 0};
    evtimer_add(pending->timer, &period);
    return;
  }
  pending->timer = evtimer_new(base, OnTimer, pending);
  const int64_t us = absl::ToInt64Microseconds(pending->action.delay);
  timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
  evtimer_add(pending->timer, &tv);
}

struct Loop {
  event_base* base = nullptr;
  evhttp* http = nullptr;
  // Bounds every request (head, body, time); outlives `http` and `base`.
  std::unique_ptr<BoundedEvhttp> bounded;
};

// The simulator's refusals in the OpenAI error shape, as its other errors.
std::string OpenAiErrorBody(int /*status*/, absl::string_view message) {
  return absl::StrCat("{\"error\":{\"message\":", JsonQuote(message),
                      ",\"type\":\"invalid_request_error\"}}");
}

// Binds and listens; returns the fd and fills `port` with the actual port, or -1.
int BindListener(const std::string& host, const std::string& port_text, int* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res) != 0) {
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 4096) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return -1;
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

constexpr char kDescription[] =
    "hb-llm-sim: OpenAI-compatible chat-completions simulator for tests, benchmarks and "
    "capacity planning.\n\n"
    "Usage: hb-llm-sim [--listen=127.0.0.1:0] [--latency-ms=200 --latency-jitter=0.2] "
    "[--fault-429=0.05 ...] [--rpm=500 --tpm=200000]\n\n"
    "Endpoints: POST /v1/chat/completions (and /chat/completions), POST /v1/responses (and "
    "/responses), the policy route POST "
    "/policy/v1/chat/completions, GET /v1/models, GET /healthz, GET /metrics. Every response "
    "carries x-hb-llm-sim: 1.\n"
    "Verdict: criteria_met = lowest bit of sha256(last user message)[0], unless the message "
    "contains [[sim:met=true]] / [[sim:met=false]] (the last marker wins).\n"
    "Flags may be written with hyphens or underscores (--latency-ms == --latency_ms).\n"
    "See simulator/README.md for the exact rules.";

// BoundedEvhttp's defaults but a 32 MiB body.
HttpServerLimits SimHttpLimits() {
  HttpServerLimits limits;
  limits.max_body_bytes = 32 << 20;
  return limits;
}

// The transport's own settings; the simulator's are SimulatorOptions.
struct Flags {
  SimulatorOptions sim;
  std::string listen = "127.0.0.1:8000";
  int threads = 0;
  std::string request_log;
  // The request limits (cli/http_limit_flags.h), with a bigger body: the Batch API takes files.
  cli::HttpLimitFlags http = cli::HttpLimitFlagsFrom(SimHttpLimits());
  int http_timeout_s = 600;
  std::string log_level = "info";
  std::vector<std::string> policy_models;
  std::vector<std::string> required_headers;
};

void AddFlags(cli::Command& command, Flags* flags) {
  SimulatorOptions& sim = flags->sim;
  command.Group("server");
  command.Flag("listen", &flags->listen, "HOST:PORT",
               "HOST:PORT to listen on; port 0 picks a free port. The first stdout line is "
               "'listening on HOST:PORT' with the actual port.");
  command.Flag("threads", &flags->threads, "N",
               "event loops sharing the listening socket; 0 = number of cores");
  command.Flag("api-key", &sim.api_key, "KEY",
               "when set, chat requests must carry 'Authorization: Bearer <key>', else 401");
  command.Repeated("require-header", &flags->required_headers, "NAME=VALUE",
                   "every request must carry this header (name case-insensitive, value exact), "
                   "else 401, as a gateway or Azure's api-key would (repeatable)");
  command.Repeated("require-body-key", &sim.required_body_keys, "KEY",
                   "every grader request body must have this top-level key, else 400 (a judge "
                   "that needs its guided-decoding field; repeatable)");
  command.Flag("request-log", &flags->request_log, "PATH",
               "file to append one JSON line per chat request (time, status, fault, "
               "latency_ms, prompt_tokens, cached_tokens, verdict)");
  cli::AddHttpLimitFlags(command, &flags->http);
  command.Flag("http-timeout-s", &flags->http_timeout_s, "SECONDS",
               "idle/read/write timeout of a connection (also bounds --fault-hang holds)");
  command.Flag("log-level", &flags->log_level, "LEVEL",
               "stderr log level: debug, info, warn, error");
  command.Group("behaviour");
  command.Flag("latency-ms", &sim.latency_ms, "MS",
               "mean response latency in milliseconds (a timer per request)");
  command.Flag("latency-jitter", &sim.latency_jitter, "FRACTION",
               "latency jitter as a fraction of the mean: uniform in [mean*(1-j), mean*(1+j))");
  command.Flag("seed", &sim.seed, "N",
               "seed for latency jitter and fault draws; request n (0-based, arrival order) "
               "always gets the same draws");
  command.Flag("fault-429", &sim.faults.status_429, "RATE",
               "rate of injected 429s (with Retry-After and retry-after-ms headers)");
  command.Flag("fault-500", &sim.faults.status_500, "RATE", "rate of injected 500 responses");
  command.Flag("fault-503", &sim.faults.status_503, "RATE", "rate of injected 503 responses");
  command.Flag("fault-malformed", &sim.faults.malformed, "RATE",
               "rate of 200 replies whose content is not valid JSON");
  command.Flag("fault-fenced", &sim.faults.fenced, "RATE",
               "rate of 200 replies whose content is the correct JSON inside ```json ... ```");
  command.Flag("fault-nonobject", &sim.faults.nonobject, "RATE",
               "rate of 200 replies whose content is a JSON non-object (42, \"criteria_met\", "
               "[true])");
  command.Flag("fault-hang", &sim.faults.hang, "RATE",
               "rate of requests never answered (held until the client quits)");
  command.Flag("fault-reset", &sim.faults.reset, "RATE",
               "rate of requests answered by closing the connection (TCP RST), no response");
  command.Flag("retry-after-ms", &sim.retry_after_ms, "MS",
               "retry delay advertised by injected 429s");
  command.Flag("rpm", &sim.rate_limits.rpm, "N",
               "requests per 60 s window; 0 = unlimited. Excess gets 429");
  command.Flag("tpm", &sim.rate_limits.tpm, "N",
               "tokens (prompt estimate + max_tokens) per 60 s window; 0 = unlimited");
  command.Flag("prompt-cache-ttl", &sim.prompt_cache.ttl, "DURATION",
               "how long a cached prompt prefix stays usable after its last use (e.g. 5m)");
  command.Group("Batch API (/v1/files, /v1/batches)");
  command.Flag("batch-completion-delay", &sim.batch.completion_delay, "DURATION",
               "how long after its creation a batch completes (its lines are answered then, "
               "through the chat handling above, faults included)");
  command.Flag("batch-fault-failed", &sim.batch.fault_failed, "RATE",
               "rate of batch lines put in the error file as failed (server_error)");
  command.Flag("batch-fault-expired", &sim.batch.fault_expired, "RATE",
               "rate of batch lines put in the error file as expired (batch_expired); the "
               "batch's status is then 'expired'");
  command.Group("policy mode (POST /policy/v1/chat/completions)");
  command.Repeated("policy-models", &flags->policy_models, "NAME[,NAME...]",
                   "models the policy route serves (repeat or comma list); others get 404 "
                   "model_not_found. Empty: any model");
  command.Flag("policy-latency-ms", &sim.policy_latency_ms, "MS",
               "mean latency of policy replies; negative: --latency-ms");
}

absl::Status Validate(const SimulatorOptions& options) {
  for (double rate : {options.faults.status_429, options.faults.status_500,
                      options.faults.status_503, options.faults.malformed, options.faults.fenced,
                      options.faults.nonobject, options.faults.hang, options.faults.reset,
                      options.batch.fault_failed, options.batch.fault_expired}) {
    if (!(rate >= 0 && rate <= 1)) {
      return absl::InvalidArgumentError("fault rates must be in [0, 1]");
    }
  }
  if (options.latency_ms < 0 || options.latency_jitter < 0 || options.latency_jitter > 1 ||
      options.retry_after_ms < 0 || options.rate_limits.rpm < 0 || options.rate_limits.tpm < 0) {
    return absl::InvalidArgumentError(
        "--latency-ms, --retry-after-ms, --rpm, --tpm must be >= 0 and --latency-jitter in "
        "[0, 1]");
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  hb::TuneProcess();
  Flags flags;
  cli::Program program("hb-llm-sim", kDescription);
  program.root().LastValueWins();
  AddFlags(program.root(), &flags);
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv)) return *exit_code;
  InitLogging(flags.log_level.c_str());
  for (const std::string& value : flags.policy_models) {
    for (absl::string_view name : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      flags.sim.policy_models.emplace_back(absl::StripAsciiWhitespace(name));
    }
  }
  for (const std::string& value : flags.required_headers) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return program.UsageError(
          "", absl::InvalidArgumentError(absl::StrCat("--require-header expects NAME=VALUE, got '",
                                                      value.substr(0, eq), "...'")));
    }
    flags.sim.required_headers.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  }
  flags.sim.batch.seed = flags.sim.seed;
  const SimulatorOptions& options = flags.sim;
  if (absl::Status valid = Validate(options); !valid.ok()) {
    return program.UsageError("", valid);
  }

  absl::StatusOr<HttpServerLimits> http_limits =
      cli::ResolveHttpLimitFlags(flags.http, SimHttpLimits());
  if (!http_limits.ok()) return program.UsageError("", http_limits.status());
  if (flags.http_timeout_s < 1) {
    return program.UsageError("", absl::InvalidArgumentError("--http-timeout-s must be >= 1"));
  }

  const std::string& listen = flags.listen;
  HostPortRules listen_rules = ListenRules("--listen");
  listen_rules.empty_host_ok = true;  // ":PORT": every interface
  absl::StatusOr<HostPort> address = ParseHostPort(listen, listen_rules);
  if (!address.ok()) return program.UsageError("", address.status());
  int port = 0;
  const int fd = BindListener(address->host, std::to_string(address->port), &port);
  if (fd < 0) {
    std::fprintf(stderr, "cannot listen on %s: %s\n", listen.c_str(), std::strerror(errno));
    return 1;
  }

  RequestLog request_log;
  if (!flags.request_log.empty() && !request_log.Open(flags.request_log)) {
    std::fprintf(stderr, "cannot open --request-log %s\n", flags.request_log.c_str());
    return 1;
  }

  std::signal(SIGPIPE, SIG_IGN);
  evthread_use_pthreads();
  Simulator simulator(options, &Clock::Real());
  Server server{&simulator, &request_log};
  int threads = flags.threads;
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());

  std::vector<Loop> loops(threads);
  for (Loop& loop : loops) {
    // Latency is what the simulator is for: without the precise-timer flag libevent reads
    // CLOCK_MONOTONIC_COARSE and a 300 ms delay may end a few milliseconds early.
    event_config* config = event_config_new();
    event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    loop.base = event_base_new_with_config(config);
    event_config_free(config);
    if (loop.base == nullptr) {
      std::fprintf(stderr, "event_base_new_with_config failed\n");
      return 1;
    }
    loop.http = evhttp_new(loop.base);
    evhttp_set_gencb(loop.http, OnRequest, &server);
    HttpServerLimits limits = *http_limits;
    limits.idle_timeout = absl::Seconds(flags.http_timeout_s);
    loop.bounded = std::make_unique<BoundedEvhttp>(loop.http, limits, OpenAiErrorBody);
    evhttp_set_allowed_methods(loop.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                              EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_OPTIONS);
    // Each loop owns a duplicate of the one listening socket (libevent closes it on free).
    if (evhttp_accept_socket(loop.http, dup(fd)) != 0) {
      std::fprintf(stderr, "evhttp_accept_socket failed\n");
      return 1;
    }
  }
  close(fd);
  {
    // Before the loop threads start; the loops are thread-safe (evthread_use_pthreads). The
    // watcher may still be inside this callback when loop 0 has stopped: it is joined at the end
    // of this block, before the loops are freed.
    StopSignals signals([&loops](int /*signal*/, int /*count*/) {
      for (Loop& loop : loops) event_base_loopexit(loop.base, nullptr);
    });

    const std::string host(HostPartOf(listen));
    std::printf("listening on %s:%d\n", host.c_str(), port);
    std::fflush(stdout);
    HB_LOG_INFO("hb-llm-sim listening on {}:{} threads={}", host, port, threads);

    std::vector<std::thread> workers;
    for (int i = 1; i < threads; ++i) {
      workers.emplace_back([&loops, i] { event_base_dispatch(loops[i].base); });
    }
    event_base_dispatch(loops[0].base);
    for (Loop& loop : loops) event_base_loopexit(loop.base, nullptr);
    for (std::thread& t : workers) t.join();
  }

  for (Loop& loop : loops) {
    evhttp_free(loop.http);
    event_base_loop(loop.base, EVLOOP_NONBLOCK);  // finalizes the freed connections
    event_base_free(loop.base);
  }
  HB_LOG_INFO("hb-llm-sim stopped");
  return 0;
}

}  // namespace
}  // namespace hb::sim

int main(int argc, char** argv) { return hb::sim::Run(argc, argv); }
