// The proto <-> domain conversions of SubmitResult (healthbench.env.v1.SubmitResponse), below
// the transports: the gRPC service answers with them, and the result store's SQLite file keeps
// results in this form. Protobuf only, no gRPC (as grader/grader_proto.h for the grader).
#pragma once

#include "environment/environment.h"
#include "healthbench/env/v1/env.pb.h"

namespace hb::env {

namespace env_v1 = ::healthbench::env::v1;

// Domain -> proto (request_id is the caller's to set).
void SubmitResultToProto(const SubmitResult& result, env_v1::SubmitResponse* out);
// The inverse of SubmitResultToProto (request_id is dropped).
SubmitResult SubmitResultFromProto(const env_v1::SubmitResponse& proto);

}  // namespace hb::env
