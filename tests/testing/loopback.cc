#include "tests/testing/loopback.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/base/file.h"
#include "event2/buffer.h"
#include "event2/event.h"
#include "event2/http.h"
#include "event2/keyvalq_struct.h"
#include "event2/thread.h"
#include "gtest/gtest.h"
#include "http/bounded_evhttp.h"
#include "tests/testing/poll_until.h"
#include "tests/testing/shared_data.h"

extern char** environ;

namespace hb::testing {

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval guard{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof(guard));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0)
      << "127.0.0.1:" << port;
  return fd;
}

std::string LoopbackRequest::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(key, name)) return value;
  }
  return "";
}

namespace {

// BoundedEvhttp's limits, with room for the bodies the tests' clients send (batch files, large
// prompts): a test server is read like every listener of the project, but is not what a test
// of a size limit exercises.
HttpServerLimits LoopbackLimits() {
  HttpServerLimits limits;
  limits.max_body_bytes = size_t{256} << 20;
  return limits;
}

}  // namespace

struct LoopbackHttpServer::Impl {
  Handler handler;
  // Freed after `http` and `base` (~LoopbackHttpServer frees those first).
  std::unique_ptr<BoundedEvhttp> bounded;
  event_base* base = nullptr;
  evhttp* http = nullptr;
  std::thread thread;
  mutable absl::Mutex mu;
  std::vector<LoopbackRequest> requests ABSL_GUARDED_BY(mu);

  struct Delayed {
    evhttp_request* req;
    LoopbackResponse response;
  };

  static void Send(evhttp_request* req, const LoopbackResponse& response) {
    evkeyvalq* out = evhttp_request_get_output_headers(req);
    for (const auto& [key, value] : response.headers) {
      evhttp_add_header(out, key.c_str(), value.c_str());
    }
    evbuffer* buf = evbuffer_new();
    evbuffer_add(buf, response.body.data(), response.body.size());
    evhttp_send_reply(req, response.status, "Loopback", buf);
    evbuffer_free(buf);
  }

  static void OnDelay(evutil_socket_t, short, void* arg) {
    std::unique_ptr<Delayed> delayed(static_cast<Delayed*>(arg));
    Send(delayed->req, delayed->response);
  }

  static void OnRequest(evhttp_request* req, void* arg) {
    auto* impl = static_cast<Impl*>(arg);
    LoopbackRequest request;
    switch (evhttp_request_get_command(req)) {
      case EVHTTP_REQ_POST:
        request.method = "POST";
        break;
      case EVHTTP_REQ_GET:
        request.method = "GET";
        break;
      default:
        request.method = "OTHER";
        break;
    }
    request.uri = evhttp_request_get_uri(req);
    evkeyvalq* in = evhttp_request_get_input_headers(req);
    for (evkeyval* kv = in->tqh_first; kv != nullptr; kv = kv->next.tqe_next) {
      request.headers.emplace_back(kv->key, kv->value);
    }
    evbuffer* body = evhttp_request_get_input_buffer(req);
    size_t length = evbuffer_get_length(body);
    request.body.resize(length);
    evbuffer_copyout(body, request.body.data(), length);
    char* peer_address = nullptr;
    ev_uint16_t peer_port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer_address, &peer_port);
    request.peer_port = peer_port;
    LoopbackResponse response = impl->handler(request);
    {
      absl::MutexLock lock(&impl->mu);
      impl->requests.push_back(std::move(request));
    }
    if (response.hang) return;
    if (response.delay > absl::ZeroDuration()) {
      timeval tv = absl::ToTimeval(response.delay);
      event_base_once(impl->base, -1, EV_TIMEOUT, &OnDelay, new Delayed{req, std::move(response)},
                      &tv);
      return;
    }
    Send(req, response);
  }
};

absl::StatusOr<std::unique_ptr<LoopbackHttpServer>> LoopbackHttpServer::Start(Handler handler) {
  static const int threads_ready = evthread_use_pthreads();
  (void)threads_ready;
  std::unique_ptr<LoopbackHttpServer> server(new LoopbackHttpServer());
  server->impl_ = std::make_unique<Impl>();
  Impl& impl = *server->impl_;
  impl.handler = std::move(handler);
  impl.base = event_base_new();
  if (impl.base == nullptr) return absl::InternalError("event_base_new failed");
  impl.http = evhttp_new(impl.base);
  if (impl.http == nullptr) return absl::InternalError("evhttp_new failed");
  evhttp_set_gencb(impl.http, &Impl::OnRequest, &impl);
  impl.bounded = std::make_unique<BoundedEvhttp>(impl.http, LoopbackLimits());
  evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(impl.http, "127.0.0.1", 0);
  if (bound == nullptr) return absl::InternalError("evhttp_bind_socket failed");
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&addr), &len);
  server->port_ = ntohs(addr.sin_port);
  impl.thread = std::thread([base = impl.base] { event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY); });
  return server;
}

LoopbackHttpServer::~LoopbackHttpServer() {
  if (impl_ == nullptr) return;
  if (impl_->thread.joinable()) {
    // loopexit, not loopbreak: event_base_loop clears a break asked before it starts, and a
    // server destroyed before its thread entered the loop would then never be joined.
    event_base_loopexit(impl_->base, nullptr);
    impl_->thread.join();
  }
  if (impl_->http != nullptr) evhttp_free(impl_->http);
  if (impl_->base != nullptr) event_base_free(impl_->base);
}

std::string LoopbackHttpServer::base_url() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

std::vector<LoopbackRequest> LoopbackHttpServer::requests() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->requests;
}

bool LoopbackHttpServer::WaitForRequests(size_t n, absl::Duration timeout) const {
  const std::vector<LoopbackRequest>* requests = &impl_->requests;
  auto enough = [requests, n]() { return requests->size() >= n; };
  absl::MutexLock lock(&impl_->mu);
  return impl_->mu.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError(strerror(errno));
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdout_fd_ = fds[0];
  return child;
}

absl::StatusOr<std::string> ChildProcess::ReadFirstLine(absl::Duration timeout) {
  absl::StatusOr<std::vector<std::string>> lines = ReadFirstLines(1, timeout);
  if (!lines.ok()) return lines.status();
  return lines->front();
}

absl::StatusOr<std::vector<std::string>> ChildProcess::ReadFirstLines(size_t n,
                                                                      absl::Duration timeout) {
  return ReadLines([n](const std::vector<std::string>& lines) { return lines.size() == n; },
                   timeout);
}

absl::StatusOr<std::string> ChildProcess::ReadUntilLineContaining(absl::string_view needle,
                                                                  absl::Duration timeout) {
  absl::StatusOr<std::vector<std::string>> lines = ReadLines(
      [needle](const std::vector<std::string>& read) {
        return !read.empty() && absl::StrContains(read.back(), needle);
      },
      timeout);
  if (!lines.ok()) return lines.status();
  return lines->back();
}

absl::StatusOr<std::vector<std::string>> ChildProcess::ReadLines(
    const std::function<bool(const std::vector<std::string>&)>& enough, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> lines;
  while (true) {
    size_t newline;
    while (!enough(lines) && (newline = buffered_.find('\n')) != std::string::npos) {
      lines.push_back(buffered_.substr(0, newline));
      buffered_.erase(0, newline + 1);
    }
    if (enough(lines)) {
      // Keep draining stdout so the child never blocks on a full pipe.
      if (!drain_.joinable()) {
        drain_ = std::thread([fd = stdout_fd_] {
          char buf[4096];
          while (read(fd, buf, sizeof(buf)) > 0) {
          }
        });
      }
      return lines;
    }
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("child printed no line in time");
    }
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready <= 0) continue;
    char buf[1024];
    ssize_t n_read = read(stdout_fd_, buf, sizeof(buf));
    if (n_read <= 0) return absl::UnavailableError("child exited before printing a line");
    buffered_.append(buf, static_cast<size_t>(n_read));
  }
}

int ChildProcess::Stop(int signal, absl::Duration timeout) {
  if (reaped_) return -1;
  kill(pid_, signal);
  // waitpid blocks; run it on a helper thread and wait for it with a deadline.
  auto done = std::make_shared<absl::Notification>();
  auto status = std::make_shared<int>(0);
  std::thread waiter([pid = pid_, done, status] {
    waitpid(pid, status.get(), 0);
    done->Notify();
  });
  if (!done->WaitForNotificationWithTimeout(timeout)) {
    kill(pid_, SIGKILL);
    waiter.join();
    reaped_ = true;
    return -1;
  }
  waiter.join();
  reaped_ = true;
  return *status;
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (drain_.joinable()) drain_.join();  // EOF once the child is gone
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

absl::StatusOr<LlmSim> StartLlmSim(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {BinaryDir() + "/simulator/hb-llm-sim", "--listen=127.0.0.1:0",
                                   "--log-level=error"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (access(argv[0].c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(argv[0], " is missing; build hb-llm-sim first"));
  }
  LlmSim sim;
  auto process = ChildProcess::Spawn(argv);
  if (!process.ok()) return process.status();
  sim.process = *std::move(process);
  auto line = sim.process->ReadFirstLine(absl::Seconds(20));
  if (!line.ok()) return line.status();
  size_t colon = line->rfind(':');
  if (!absl::StartsWith(*line, "listening on ") || colon == std::string::npos ||
      !absl::SimpleAtoi(line->substr(colon + 1), &sim.port)) {
    return absl::InternalError(absl::StrCat("unexpected first line from hb-llm-sim: ", *line));
  }
  sim.base_url = absl::StrCat("http://127.0.0.1:", sim.port, "/v1");
  return sim;
}

absl::StatusOr<GraderReplica> StartGrader(const LlmSim& sim,
                                          const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {BinaryDir() + "/grader_service/hb-grader",
                                   "--listen=127.0.0.1:0",
                                   "--metrics-listen=",
                                   "--llm-base-url=" + sim.base_url,
                                   "--grader-template=" + ReferenceTemplatePath(),
                                   "--log-level=warn"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  GraderReplica grader;
  absl::StatusOr<std::unique_ptr<ChildProcess>> process = ChildProcess::Spawn(argv);
  if (!process.ok()) return process.status();
  grader.process = *std::move(process);
  absl::StatusOr<std::string> line = grader.process->ReadFirstLine(absl::Seconds(30));
  if (!line.ok()) return line.status();
  if (!absl::StartsWith(*line, "listening on ") ||
      !absl::SimpleAtoi(line->substr(line->rfind(':') + 1), &grader.port)) {
    return absl::InternalError("hb-grader printed: " + *line);
  }
  grader.target = absl::StrCat("ipv4:127.0.0.1:", grader.port);
  return grader;
}

int64_t SimCounter(const LlmSim& sim, const std::string& name) {
  return MetricsValue(sim.port, name);
}

int64_t MetricsValue(int port, const std::string& name) {
  const int fd = ConnectLoopback(port);
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  for (absl::string_view line : absl::StrSplit(response, '\n')) {
    if (absl::ConsumePrefix(&line, name + " ")) {
      double value = 0;
      if (absl::SimpleAtod(absl::StripAsciiWhitespace(line), &value)) {
        return static_cast<int64_t>(value);
      }
    }
  }
  return -1;
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         absl::Duration timeout) {
  const std::string capture = MakeTempDir();
  const std::string out = capture + "/stdout", err = capture + "/stderr";
  std::vector<std::string> argv_strings = argv;
  std::vector<char*> args;
  for (std::string& arg : argv_strings) args.push_back(arg.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings = env;
  for (char** e = environ; *e != nullptr; ++e) env_strings.push_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  ProcessResult result;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "cannot run " << argv[0] << ": error " << spawned;
    return result;
  }
  // The exit is waited for on a pidfd (readable when the process ends), with the timeout.
  // (glibc 2.36 declares pidfd_open without C linkage for C++: the system call directly.)
  // Without a pidfd (an old kernel, a seccomp profile) the same bound by polling waitpid.
  int status = 0;
  bool reaped = false;
  bool in_time = true;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd exited{pidfd, POLLIN, 0};
    in_time = poll(&exited, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) == 1;
    close(pidfd);
  } else {
    reaped = in_time = PollUntil([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout,
                                 absl::Milliseconds(10));
  }
  if (!in_time) {
    ADD_FAILURE() << argv[0] << " still running after " << absl::FormatDuration(timeout);
    kill(pid, SIGKILL);
  }
  if (!reaped) waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (auto [path, text] : {std::pair{&out, &result.out}, std::pair{&err, &result.err}}) {
    absl::StatusOr<std::string> read = ReadFile(*path);
    EXPECT_TRUE(read.ok()) << read.status();
    if (read.ok()) *text = *std::move(read);
  }
  return result;
}

int HalfClosedConnections(int port) {
  constexpr absl::string_view kCloseWait = "08";
  constexpr absl::string_view kLoopback = "0100007F";  // 127.0.0.1 as /proc/net/tcp writes it
  absl::StatusOr<std::string> text = ReadFile("/proc/net/tcp");
  if (!text.ok()) return 0;
  int count = 0;
  // "  sl  local_address rem_address   st ...", addresses as HEXIP:HEXPORT.
  for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.size() < 4 || fields[3] != kCloseWait) continue;
    const size_t colon = fields[1].rfind(':');
    int local_port = 0;
    if (colon != absl::string_view::npos && fields[1].substr(0, colon) == kLoopback &&
        absl::SimpleHexAtoi(fields[1].substr(colon + 1), &local_port) && local_port == port) {
      ++count;
    }
  }
  return count;
}

}  // namespace hb::testing
