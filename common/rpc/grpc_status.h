// The one place that converts between absl::Status and grpc::Status. The code numbers are the
// same in both (both follow google.rpc.Code) and messages pass through unchanged. Typed
// details travel too: each absl::Status payload (type URL → serialized message, e.g. the
// google.rpc.RetryInfo of common/retry/retry_status.h) becomes a google.protobuf.Any in the
// google.rpc.Status sent as grpc-status-details-bin, and back; so any gRPC client that reads
// the standard error details sees the retry delay.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace hb {

// `status` as a grpc::Status; error_details() holds a serialized google.rpc.Status when
// `status` carries payloads (empty otherwise).
grpc::Status ToGrpcStatus(const absl::Status& status);

// `status` as an absl::Status; the Any details of a google.rpc.Status in error_details()
// become payloads (unparseable details are ignored: the code and message still come through).
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace hb
