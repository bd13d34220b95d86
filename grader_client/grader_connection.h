// The one place a process chooses and connects its grader (`--grader`): the grading stack in this
// process (EmbeddedGrader), or hb-grader replicas over gRPC. Used by `hb-orchestrator run` and
// hb-env, so both connect, check and report a grader the same way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "grader/grader_stack_options.h"
#include "grader_client/embedded_grader.h"
#include "grader_client/grader_client.h"
#include "healthbench/grader/v1/grader.pb.h"
#include "security/transport_security.h"

namespace hb {

// The --grader value that selects the in-process grader; anything else is a gRPC target.
inline constexpr char kEmbeddedGrader[] = "embedded";

// Where the grader is, parsed once from --grader.
struct GraderTarget {
  enum class Kind { kEmbedded, kRemote };
  Kind kind = Kind::kEmbedded;
  // The gRPC target of the replicas (kRemote).
  std::string address;
  bool embedded() const { return kind == Kind::kEmbedded; }
};

// "embedded" or a gRPC target: a resolver scheme gRPC knows with an address ("dns:///
// grader-headless:50051", "ipv4:127.0.0.1:50051,127.0.0.1:50052", "unix:/run/grader.sock") or
// HOST:PORT ("127.0.0.1:50051"). kInvalidArgument naming --grader for an empty value, white space,
// a scheme gRPC does not resolve, a value without a scheme or a port, and an HTTP URL
// ("http://127.0.0.1:9/v1": the message sends it to --llm-base-url).
absl::StatusOr<GraderTarget> ParseGraderTarget(const std::string& flag);

struct GraderConnectOptions {
  GraderTarget target;
  // The in-process grader's whole configuration (kEmbedded).
  GraderStackOptions stack;
  // TLS and token towards the replicas (kRemote).
  ClientSecurityOptions security;
  // How long a replica has to accept a connection and answer GetInfo (kRemote).
  absl::Duration ready_timeout = absl::Seconds(5);
};

// A connected grader. Close() (or the destructor) drops the client first, then the stack.
struct GraderConnection {
  // Set for kEmbedded: the grading stack in this process (its client is the grader).
  std::unique_ptr<EmbeddedGrader> embedded;
  // Set for kRemote, with a timer thread for the caller's pacing.
  std::unique_ptr<GraderClient> client;
  std::unique_ptr<Scheduler> timers;
  // What the grader grades with: the embedded grader's, or the replicas' (which agree).
  healthbench::grader::v1::GraderInfo info;
  // The replicas that answered GetInfo (empty for kEmbedded).
  std::vector<std::string> replicas;

  GraderClient& grader_client() { return embedded != nullptr ? embedded->client() : *client; }
  // Timers for pacing work beside the grader: the embedded stack's HTTP loop, or `timers`.
  Scheduler& scheduler() { return embedded != nullptr ? embedded->scheduler() : *timers; }
  ~GraderConnection() { Close(); }
  void Close();
};

// kEmbedded starts the stack (EmbeddedGrader::Start's errors). kRemote connects to one replica
// within ready_timeout (kInvalidArgument "no hb-grader replica reachable at <target> within
// <timeout>: ...", or for a bad target or credential file), then asks every replica what it
// grades with and fails with kFailedPrecondition naming two replicas and the field when they
// disagree (AgreedReplicaInfos). Blocks up to about 2 x ready_timeout.
absl::StatusOr<std::unique_ptr<GraderConnection>> ConnectGrader(
    const GraderConnectOptions& options);

}  // namespace hb
