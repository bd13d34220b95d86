// Transport settings every hb gRPC server shares (hb-grader, hb-env), in one place.
#pragma once

#include "grpcpp/server_builder.h"

namespace hb {

// Applies to `builder`:
//  - no SO_REUSEPORT: a second server on a port already in use fails to start instead of
//    silently taking half of the connections;
//  - max_receive_message_bytes as the receive limit;
//  - a resource quota of max_receive_message_bytes + 8 MiB (the headroom: other calls' small
//    messages, HTTP/2 frames, call arenas). gRPC 1.51's HTTP/2 transport buffers a whole
//    message before it applies the receive limit (grpc/grpc#43012), so without a quota a
//    60 MB request costs 60 MB before it is refused.
//    With it, once the buffered bytes pass the quota gRPC resets a stream (the caller sees
//    RESOURCE_EXHAUSTED, "Received RST_STREAM with error code 11") and frees its buffers. Under
//    pressure the stream reset may be another caller's; RESOURCE_EXHAUSTED is retryable.
void ConfigureServerTransport(grpc::ServerBuilder& builder, int max_receive_message_bytes);

}  // namespace hb
