#include "common/rpc/server_transport.h"

#include <algorithm>
#include <cstddef>

#include "grpc/grpc.h"
#include "grpcpp/resource_quota.h"

namespace hb {

namespace {

// Bytes the transport may hold beyond the receive limit before gRPC resets streams.
constexpr size_t kHeadroomBytes = size_t{8} << 20;

}  // namespace

void ConfigureServerTransport(grpc::ServerBuilder& builder, int max_receive_message_bytes) {
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(max_receive_message_bytes);
  grpc::ResourceQuota quota("hb-server-transport");
  quota.Resize(static_cast<size_t>(std::max(max_receive_message_bytes, 0)) + kHeadroomBytes);
  builder.SetResourceQuota(quota);
}

}  // namespace hb
