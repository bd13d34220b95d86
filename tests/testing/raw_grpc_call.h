// RawUnaryCall: one unary gRPC call with the request as raw bytes (a message that need not
// parse), for tests of how servers treat malformed requests.
#pragma once

#include <string>

#include "grpcpp/channel.h"
#include "grpcpp/support/status.h"

namespace hb::testing {

// Calls `method` ("/package.Service/Method") on `channel` with `request_bytes`, waiting up to
// 30 s; the reply's bytes go to `*response_bytes` when the call succeeds. `authorization`, when
// not empty, is sent as the `authorization` metadata.
grpc::Status RawUnaryCall(grpc::Channel& channel, const std::string& method,
                          const std::string& request_bytes, std::string* response_bytes,
                          const std::string& authorization = "");

}  // namespace hb::testing
