// OrsServerOptions: the settings of hb-env's HTTP listener (ors_http_server.h) and of its
// routes (ors_routes.h, trainer_routes.h).
#pragma once

#include <cstddef>
#include <string>

#include "absl/time/time.h"
#include "environment/env_metrics.h"
#include "environment/trainer_protocols.h"
#include "http/bounded_evhttp.h"
#include "security/bearer_tokens.h"

namespace hb::env {

struct OrsServerOptions {
  // "host:port" or "[v6]:port"; port 0 picks a free port (see port()).
  std::string listen = "127.0.0.1:8080";
  std::string env_name = "healthbench";
  absl::Duration session_idle_timeout = absl::Minutes(15);
  size_t max_body_bytes = 4 << 20;
  // Head, request-line and time limits of every request (its max_body_bytes is replaced by
  // the one above).
  HttpServerLimits http_limits;
  // How often the reaper runs (real time; idleness itself is judged by the injected clock).
  absl::Duration reaper_period = absl::Seconds(5);
  // Interval of ": ping" comments on an open call stream (the reference's 10 s).
  absl::Duration ping_interval = absl::Seconds(10);
  // How long a finished call's result stays readable by call id (the reference's 60 s).
  absl::Duration call_linger = absl::Seconds(60);
  // Bounds on what clients can make the server hold (see OrsSessionManager::Options): open
  // sessions (past it /create answers 429) and finished results kept for reconnects (the oldest
  // is forgotten first).
  size_t max_sessions = 100000;
  size_t max_finished_calls = 20000;
  // Largest "chunk"/"end" event payload (the reference's 4096).
  size_t sse_chunk_bytes = 4096;
  // libevent's read/write timeout of a connection: an idle keep-alive connection is closed
  // after it, and so would be an open call stream without its pings, hence it must exceed
  // ping_interval.
  absl::Duration io_timeout = absl::Seconds(60);
  // Accepted bearer tokens (`Authorization: Bearer <token>` or `X-API-Key: <token>`, as the ORS
  // client sends ORS_API_KEY, or `Authorization: Basic` with the token as password); every
  // route but /health answers 401 without one. Empty: open.
  BearerTokens tokens;
  // The trainer routes' options (hb-env's --strip-suffix).
  TrainerProtocolOptions trainer;
  // Per trainer route metrics (optional; not owned, must outlive the server).
  EnvMetrics* metrics = nullptr;
  // Serve a non-loopback address without tokens (see security/transport_security.h).
  bool allow_insecure = false;
};

}  // namespace hb::env
