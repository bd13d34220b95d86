#include "environment/http/ors_http_server.h"

#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "environment/http/ors_routes.h"
#include "environment/http/route_support.h"
#include "environment/http/trainer_routes.h"
#include "http/http_server.h"
#include "security/transport_security.h"

namespace hb::env {

class OrsHttpServer::Impl {
 public:
  Impl(Environment& env, Clock& clock, const OrsServerOptions& options)
      : options_(options),
        trainer_(env, options.trainer, options.metrics, inbox_),
        routes_(env, clock, options, inbox_) {
    routes_.Register(&table_, &trainer_);
  }
  ~Impl() { Shutdown(); }

  // Checks the options, binds and arms the timers; serves once Start() runs the loop.
  absl::Status Listen();
  void Start();
  int port() const { return http_->port(); }
  bool Post(absl::AnyInvocable<void()> task) { return PostToLoop(*inbox_, std::move(task)); }
  OrsSessionManager& sessions() { return routes_.sessions(); }
  void Shutdown();

 private:
  const OrsServerOptions options_;
  std::shared_ptr<LoopInbox> inbox_ = std::make_shared<LoopInbox>();
  TrainerRoutes trainer_;
  OrsRoutes routes_;
  HttpRouteTable table_;
  // Destroyed first: closing its connections runs the routes' stream callbacks.
  std::unique_ptr<HttpServer> http_;
};

absl::Status OrsHttpServer::Impl::Listen() {
  if (options_.sse_chunk_bytes < 8 || options_.max_body_bytes == 0) {
    return absl::InvalidArgumentError("sse_chunk_bytes must be >= 8 and max_body_bytes > 0");
  }
  if (options_.io_timeout <= options_.ping_interval) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_timeout (", absl::FormatDuration(options_.io_timeout),
                     ") must exceed ping_interval (", absl::FormatDuration(options_.ping_interval),
                     "): an open call stream is kept alive by its pings"));
  }
  HttpServerOptions server;
  server.listen = options_.listen;
  server.listen_name = "--http-listen";
  server.empty_host = "0.0.0.0";
  server.threads = 1;
  server.limits = options_.http_limits;
  server.limits.max_body_bytes = options_.max_body_bytes;
  server.limits.idle_timeout = options_.io_timeout;
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Bind(server, &table_);
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  routes_.StartTimers(http_->base(0));
  return absl::OkStatus();
}

void OrsHttpServer::Impl::Start() {
  absl::Notification started;
  http_->Start([this, &started](int /*loop*/) {
    {
      absl::MutexLock lock(&inbox_->mu);
      inbox_->loop_thread = std::this_thread::get_id();
    }
    started.Notify();
  });
  started.WaitForNotification();
}

void OrsHttpServer::Impl::Shutdown() {
  {
    absl::MutexLock lock(&inbox_->mu);
    inbox_->wake = nullptr;
  }
  if (http_ == nullptr) return;
  http_->Stop();
  http_->Wait();
  // The loop is stopped: everything below runs on this thread alone. Trainer requests are
  // freed with their connections; a task already queued for one must find it gone.
  trainer_.Clear();
  routes_.StopTimers();
  http_.reset();  // closes connections; the routes' stream callbacks free open streams
}

OrsHttpServer::OrsHttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<OrsHttpServer>> OrsHttpServer::Start(Environment& env, Clock& clock,
                                                                    OrsServerOptions options) {
  ServerSecurityOptions security;
  security.tokens = options.tokens;
  security.allow_insecure = options.allow_insecure;
  auto impl = std::make_unique<Impl>(env, clock, options);
  // Listen first, so a malformed address is reported as such; the socket closes with `impl`.
  if (absl::Status listening = impl->Listen(); !listening.ok()) return listening;
  if (absl::Status policy = CheckListenPolicy(options.listen, security); !policy.ok()) {
    return policy;
  }
  impl->Start();
  return std::unique_ptr<OrsHttpServer>(new OrsHttpServer(std::move(impl)));
}

int OrsHttpServer::port() const { return impl_->port(); }

void OrsHttpServer::ReapNow() {
  absl::Notification done;
  const bool posted = impl_->Post([this, &done] {
    impl_->sessions().Reap();
    done.Notify();
  });
  if (posted) done.WaitForNotification();
}

void OrsHttpServer::Shutdown() { impl_->Shutdown(); }

OrsHttpServer::~OrsHttpServer() { Shutdown(); }

}  // namespace hb::env
