#include "common/rpc/server_transport.h"

#include <algorithm>

#include "grpc/grpc.h"
#include "grpcpp/resource_quota.h"

namespace hb {

size_t TransportMemoryQuotaBytes(int max_receive_message_bytes) {
  return static_cast<size_t>(std::max(max_receive_message_bytes, 0)) + kTransportQuotaHeadroomBytes;
}

void ConfigureServerTransport(grpc::ServerBuilder& builder, int max_receive_message_bytes) {
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(max_receive_message_bytes);
  grpc::ResourceQuota quota("hb-server-transport");
  quota.Resize(TransportMemoryQuotaBytes(max_receive_message_bytes));
  builder.SetResourceQuota(quota);
}

}  // namespace hb
