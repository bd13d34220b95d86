#include "common/rpc/server_transport.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>

#include "common/base/clock.h"
#include "common/base/logging.h"
#include "common/base/rate_limited_log.h"
#include "google/protobuf/stubs/logging.h"
#include "grpc/grpc.h"
#include "grpcpp/resource_quota.h"

namespace hb {

namespace {

// Bytes the transport may hold beyond the receive limit before gRPC resets streams.
constexpr size_t kHeadroomBytes = size_t{8} << 20;

std::atomic<int64_t> suppressed_protobuf_lines{0};

void RateLimitedProtobufLog(google::protobuf::LogLevel level, const char* filename, int line,
                            const std::string& message) {
  static RateLimitedLog* log =
      new RateLimitedLog(Clock::Real(), RateLimitedLogOptions{5, absl::Seconds(10)});
  const std::optional<std::string> suffix =
      log->Admit(std::string(filename) + ":" + std::to_string(line));
  if (!suffix.has_value()) {
    suppressed_protobuf_lines++;
    return;
  }
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      HB_LOG_INFO("protobuf {}:{}: {}{}", filename, line, message, *suffix);
      break;
    case google::protobuf::LOGLEVEL_WARNING:
      HB_LOG_WARN("protobuf {}:{}: {}{}", filename, line, message, *suffix);
      break;
    default:
      HB_LOG_ERROR("protobuf {}:{}: {}{}", filename, line, message, *suffix);
  }
}

}  // namespace

void RateLimitProtobufLogs() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&RateLimitedProtobufLog); });
}

int64_t SuppressedProtobufLogLines() { return suppressed_protobuf_lines.load(); }

void ConfigureServerTransport(grpc::ServerBuilder& builder, int max_receive_message_bytes) {
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(max_receive_message_bytes);
  grpc::ResourceQuota quota("hb-server-transport");
  quota.Resize(static_cast<size_t>(std::max(max_receive_message_bytes, 0)) + kHeadroomBytes);
  builder.SetResourceQuota(quota);
  RateLimitProtobufLogs();
}

}  // namespace hb
