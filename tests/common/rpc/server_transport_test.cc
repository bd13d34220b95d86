#include "common/rpc/server_transport.h"

#include <string>

#include "google/protobuf/wrappers.pb.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

// A serialized google.protobuf.StringValue whose `value` (a proto3 string) is not valid UTF-8:
// parsing it fails, and libprotobuf logs one line per parse.
std::string InvalidUtf8StringValue() {
  const std::string value = "caf\xc3(";
  return std::string("\x0a") + static_cast<char>(value.size()) + value;
}

// What a caller sends can make libprotobuf log (before any handler or auth check runs): every
// server's transport set-up routes those lines through the rate limit, 5 per 10 s per source
// line, the rest dropped and counted.
TEST(ServerTransportTest, ProtobufLogLinesCallersCauseAreRateLimited) {
  grpc::ServerBuilder builder;
  ConfigureServerTransport(builder, 1 << 20);
  const int64_t suppressed = SuppressedProtobufLogLines();
  for (int i = 0; i < 20; ++i) {
    google::protobuf::StringValue parsed;
    EXPECT_FALSE(parsed.ParseFromString(InvalidUtf8StringValue()));
  }
  EXPECT_EQ(SuppressedProtobufLogLines() - suppressed, 15);
  // Installed once: a second server's set-up keeps the same handler and window.
  grpc::ServerBuilder second;
  ConfigureServerTransport(second, 1 << 20);
  google::protobuf::StringValue parsed;
  EXPECT_FALSE(parsed.ParseFromString(InvalidUtf8StringValue()));
  EXPECT_EQ(SuppressedProtobufLogLines() - suppressed, 16);
}

}  // namespace
}  // namespace hb
