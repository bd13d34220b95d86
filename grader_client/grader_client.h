// GraderClient: how a process (the orchestrator, hb-env) asks a grader to judge one rubric
// item. GrpcGraderClient (grpc_grader_client.h) talks to hb-grader replicas;
// InProcessGraderClient (in_process_grader_client.h) calls a hb::Grader in the same process;
// tests use FakeGraderClient.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "healthbench/grader/v1/grader.pb.h"

namespace hb {

class GraderClient {
 public:
  // Receives the verdict, or the RPC's status mapped to absl codes (kUnavailable,
  // kDeadlineExceeded, kResourceExhausted, kInternal, kUnknown are worth another attempt;
  // kInvalidArgument, kFailedPrecondition, ... are final; kCancelled after CancelAll).
  // Runs on a client thread (for gRPC, a callback thread): it must not block.
  using Callback = std::function<void(absl::StatusOr<healthbench::grader::v1::GradeItemResponse>)>;

  virtual ~GraderClient() = default;

  // Starts one GradeItem call with deadline now + `timeout` and returns at once; `done` is
  // called exactly once, possibly on another thread, possibly before GradeItem returns.
  // Thread-safe.
  virtual void GradeItem(const healthbench::grader::v1::GradeItemRequest& request,
                         absl::Duration timeout, Callback done) = 0;

  // What the grader grades with (model, settings, template sha256, upstream, version). Blocks
  // up to `timeout`: call it at start, never from a callback thread. For a fleet, one
  // replica's answer (GetInfoFromEveryReplica in grpc_grader_client.h asks them all). Errors:
  // the RPC's status mapped to absl codes; kUnimplemented from an hb-grader without GetInfo.
  virtual absl::StatusOr<healthbench::grader::v1::GraderInfo> GetInfo(absl::Duration timeout) = 0;

  // Cancels every call still outstanding; their callbacks still run (with kCancelled or their
  // real outcome if it won the race). Thread-safe.
  virtual void CancelAll() = 0;
};

}  // namespace hb
