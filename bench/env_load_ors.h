// OrsLoadDriver: the HTTP half of hb-env-load. It opens one keep-alive connection per call
// kept in flight and keeps posting on every connection, one call at a time per connection:
//  - route "ors": creates one ORS session on each connection (POST /create_session, then POST
//    /create for a task), then posts POST /{env}/call of the "answer" tool, as the ORS client
//    does;
//  - route "get_reward" / "reward" / "verify": the trainer routes, each call one sample in the
//    trainer's own shape (OpenRLHF: a chat-templated query ending in <|im_end|>; slime: the
//    response with its end token; NeMo-Gym: a row with a Responses API object), no session.
// The calls run on one libevent loop on the caller's thread (evhttp client).
//
// Not thread-safe: one thread drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load_report.h"

namespace hb::bench {

struct OrsLoadOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string env_name = "healthbench";
  // "ors", "get_reward", "reward" or "verify" (above).
  std::string route = "ors";
  // Connections (and sessions) opened: the most calls Run can keep in flight.
  int connections = 200;
  // Connection i's session is for task_ids[i % size].
  std::vector<std::string> task_ids;
  // How Run records its calls: an ORS result does not say whether it came from the cache, so
  // the caller says whether the replies are new (graded) or repeats (cache hits).
  bool graded = true;
};

class OrsLoadDriver {
 public:
  // Opens the connections and sessions. Errors: kInvalidArgument for an unknown route;
  // kUnavailable naming the route and the HTTP status (or the connection failure) of the first
  // step that failed.
  static absl::StatusOr<std::unique_ptr<OrsLoadDriver>> Connect(OrsLoadOptions options);
  ~OrsLoadDriver();

  // Makes `count` calls with `in_flight` (<= connections) outstanding and records each in
  // `recorder` (as options.graded says). The reply of call n is `reply(n)`. Returns when all
  // have finished.
  void Run(int count, int in_flight, const std::function<std::string(int64_t)>& reply,
           LoadRecorder& recorder);

  class Impl;

 private:
  explicit OrsLoadDriver(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hb::bench
