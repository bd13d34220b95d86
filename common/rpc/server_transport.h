// Transport settings every hb gRPC server shares (hb-grader, hb-env), in one place.
#pragma once

#include <cstddef>

#include "grpcpp/server_builder.h"

namespace hb {

// Bytes the transport may hold for a server beyond its receive limit (other calls' small
// messages, HTTP/2 frames, call arenas) before gRPC starts cancelling streams to free memory.
inline constexpr size_t kTransportQuotaHeadroomBytes = size_t{8} << 20;

// The transport memory quota for a server that accepts messages of up to
// `max_receive_message_bytes`: that plus kTransportQuotaHeadroomBytes.
size_t TransportMemoryQuotaBytes(int max_receive_message_bytes);

// Applies to `builder`:
//  - no SO_REUSEPORT: a second server on a port already in use fails to start instead of
//    silently taking half of the connections;
//  - max_receive_message_bytes as the receive limit;
//  - a resource quota of TransportMemoryQuotaBytes(max_receive_message_bytes). gRPC 1.51's
//    HTTP/2 transport buffers a whole message before it applies the receive limit
//    (grpc/grpc#43012), so without a quota a 60 MB request costs 60 MB before it is refused.
//    With it, once the buffered bytes pass the quota gRPC resets a stream (the caller sees
//    RESOURCE_EXHAUSTED, "Received RST_STREAM with error code 11") and frees its buffers. Under
//    pressure the stream reset may be another caller's; RESOURCE_EXHAUSTED is retryable.
void ConfigureServerTransport(grpc::ServerBuilder& builder, int max_receive_message_bytes);

}  // namespace hb
