// GraderServerOptions: hb-grader's options, the grading stack's (grader/grader_stack_options.h)
// plus what serving it adds: listen address, transport security and RPC limits, with their
// validation and the receive limit derived from the stack's limits.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grader/grader_stack_options.h"
#include "security/transport_security.h"

namespace hb {

struct GraderServerOptions : GraderStackOptions {
  // "host:port"; port 0 picks a free port (see GraderServer::port()).
  std::string listen_address = "0.0.0.0:50051";
  // RPCs in progress at once (`--max-concurrent-rpcs`); past it RESOURCE_EXHAUSTED with a
  // retry delay, marked server-busy (common/retry/retry_status.h). 0: no limit.
  int max_concurrent_rpcs = 1024;
  // Rubric items admitted beyond llm.max_upstream_in_flight, waiting for an upstream slot
  // (`--max-upstream-queue`); a request that would queue more is RESOURCE_EXHAUSTED with a
  // retry delay, marked server-busy (the grader's own bound, not the upstream's 429). 0: no
  // limit.
  int max_upstream_queue = 8192;
  // Deadline of an RPC whose client set none (`--default-deadline`).
  absl::Duration default_deadline = absl::Minutes(10);
  // Largest request accepted, in bytes.
  int max_receive_message_bytes = 64 << 20;
  // Serve grpc.reflection.v1 and v1alpha ServerReflection (lists the services and their schemas to
  // any client). Off by default.
  bool reflection = false;
  // TLS, mTLS, bearer tokens and the listen policy (security/transport_security.h): a
  // non-loopback address without tokens or mTLS is refused unless security.allow_insecure.
  ServerSecurityOptions security;
};

// CompleteGraderStackOptions on the stack half, then checks the server half (kInvalidArgument
// naming the flag) and derives max_receive_message_bytes from the limits: what a gradable
// request can need, twice max_prompt_bytes (a conversation and reply that fit one prompt, plus
// its rubric), at least max_message_bytes + 1 MiB, at most 1 GiB (8 MiB with the defaults). A
// bigger request could only be refused after parsing, at several times its size in memory;
// gRPC refuses it first (RESOURCE_EXHAUSTED). Thread-safe.
absl::StatusOr<GraderServerOptions> CompleteGraderServerOptions(GraderServerOptions options);

}  // namespace hb
