// hb-llm-sim: an OpenAI-compatible chat-completions simulator (see simulator/README.md).
//
// Transport only: one catch-all route of the project's HTTP server (http/http_server.h: N
// libevent loops, one per --threads, on one listening socket) hands each request to
// hb::sim::Simulator and carries out its SimAction. Delays are evtimers, never a sleeping
// thread, so thousands of slow requests cost a few KB each.
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
#include "http/bounded_evhttp.h"
#include "http/http_server.h"
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

void SendReply(HttpExchange& exchange, const SimAction& action) {
  exchange.Reply(action.status, action.headers, action.body);
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
    EvhttpExchange exchange(pending->req);
    SendReply(exchange, pending->action);
  }
  pending->server->sim->AddInFlight(-1);
  delete pending;
}

// The one route: every request goes to the Simulator, whose Handle maps it to an action.
void Serve(Server* server, const HttpServerRequest& http, HttpExchange& exchange) {
  SimHttpRequest request;
  request.method = http.method;
  request.path = http.path;
  request.authorization = http.Header("Authorization");
  request.content_type = http.Header("Content-Type");
  request.body = http.body;
  request.headers = http.headers;
  SimAction action = server->sim->Handle(request);
  if (action.is_chat) server->log->Write(action.log_line);

  evhttp_request* req = exchange.raw();
  if (req == nullptr ||
      (action.kind == SimAction::Kind::kReply && action.delay <= absl::ZeroDuration())) {
    SendReply(exchange, action);
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

// The simulator's refusals in the OpenAI error shape, as its other errors.
std::string OpenAiErrorBody(int /*status*/, absl::string_view message) {
  return absl::StrCat("{\"error\":{\"message\":", JsonQuote(message),
                      ",\"type\":\"invalid_request_error\"}}");
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

// The server of --listen, --threads and the request limits. Latency is what the simulator is
// for: its timers are precise (libevent's coarse clock may end a 300 ms delay a few ms early).
HttpServerOptions ServerOptions(const Flags& flags, const HttpServerLimits& limits) {
  HttpServerOptions options;
  options.listen = flags.listen;
  options.listen_name = "--listen";
  options.threads = flags.threads > 0
                        ? flags.threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.limits = limits;
  options.limits.idle_timeout = absl::Seconds(flags.http_timeout_s);
  options.methods = {"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"};
  options.precise_timers = true;
  return options;
}

// The simulator options of the repeatable flags: --policy-models (comma lists) and
// --require-header NAME=VALUE; the batch seed is --seed.
absl::Status ReadListFlags(Flags* flags) {
  for (const std::string& value : flags->policy_models) {
    for (absl::string_view name : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      flags->sim.policy_models.emplace_back(absl::StripAsciiWhitespace(name));
    }
  }
  for (const std::string& value : flags->required_headers) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--require-header expects NAME=VALUE, got '", value.substr(0, eq), "...'"));
    }
    flags->sim.required_headers.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  }
  flags->sim.batch.seed = flags->sim.seed;
  return absl::OkStatus();
}

// Starts the loops, prints the 'listening on' line and returns after SIGTERM/SIGINT stopped them.
void ServeUntilSignal(HttpServer& http, const std::string& listen) {
  // Before the loop threads start, so that they inherit the blocked signals. The watcher may
  // still be inside this callback when the loops have stopped: it is joined when this returns,
  // before the server is freed.
  StopSignals signals([&http](int /*signal*/, int /*count*/) { http.Stop(); });
  http.Start();
  const std::string host(HostPartOf(listen));
  std::printf("listening on %s:%d\n", host.c_str(), http.port());
  std::fflush(stdout);
  HB_LOG_INFO("hb-llm-sim listening on {}:{} threads={}", host, http.port(), http.threads());
  http.Wait();
}

int Run(int argc, char** argv) {
  hb::TuneProcess();
  Flags flags;
  cli::Program program("hb-llm-sim", kDescription);
  program.root().LastValueWins();
  AddFlags(program.root(), &flags);
  if (std::optional<int> exit_code = program.ParseOrExit(argc, argv)) return *exit_code;
  InitLogging(flags.log_level.c_str());
  if (absl::Status read = ReadListFlags(&flags); !read.ok()) return program.UsageError("", read);
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

  std::signal(SIGPIPE, SIG_IGN);
  RequestLog request_log;
  Simulator simulator(options, &Clock::Real());
  Server server{&simulator, &request_log};
  HttpRouteTable routes(OpenAiErrorBody);
  routes.Add({"*", "/",
              [&server](const HttpServerRequest& request, HttpExchange& exchange) {
                Serve(&server, request, exchange);
              },
              /*prefix=*/true});
  absl::StatusOr<std::unique_ptr<HttpServer>> http =
      HttpServer::Bind(ServerOptions(flags, *http_limits), &routes);
  if (!http.ok() && http.status().code() == absl::StatusCode::kInvalidArgument) {
    return program.UsageError("", http.status());
  }
  if (!http.ok()) {
    std::fprintf(stderr, "%s\n", std::string(http.status().message()).c_str());
    return 1;
  }
  if (!flags.request_log.empty() && !request_log.Open(flags.request_log)) {
    std::fprintf(stderr, "cannot open --request-log %s\n", flags.request_log.c_str());
    return 1;
  }
  ServeUntilSignal(**http, flags.listen);
  http->reset();  // closes open connections while the simulator is alive
  HB_LOG_INFO("hb-llm-sim stopped");
  return 0;
}

}  // namespace
}  // namespace hb::sim

int main(int argc, char** argv) { return hb::sim::Run(argc, argv); }
