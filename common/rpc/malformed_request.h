// MalformedRequestInterceptorFactory: gRPC's callback API answers a request whose bytes do not
// parse as the method's request message with UNIMPLEMENTED and no message, before any handler
// (and so before any token check) runs. Clients must not retry such a request, and must learn
// why; an unauthenticated caller must learn nothing. This interceptor, registered on a server,
// turns that answer into UNAUTHENTICATED when `check_caller` refuses the call's `authorization`
// metadata, else INVALID_ARGUMENT "malformed request for <method>: the bytes do not parse as its
// request message (not protobuf, or a string field that is not valid UTF-8)"; either is logged
// through `log` (kind "<Method> <CODE>", rate-limited, so a flood of malformed messages writes a
// few lines). When the bytes failed to parse because a string field is not valid UTF-8, the
// INVALID_ARGUMENT names it instead: "malformed request for <method>: string field
// '<package.Message.field>' is not valid UTF-8; send the text UTF-8 encoded". One
// implementation for hb-grader and hb-env.
//
// Constructing the factory also calls RateLimitProtobufLogs(): libprotobuf writes its own line
// for every string field that is not valid UTF-8, while gRPC parses the request, before any
// interceptor or handler runs, so for callers without a token too.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/base/rate_limited_log.h"
#include "grpcpp/support/server_interceptor.h"

namespace hb {

class MalformedRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  // The server's caller check on an `authorization` header value ("" when absent); OK for an
  // allowed caller. Must be thread-safe.
  using CallerCheck = std::function<absl::Status(absl::string_view authorization)>;

  // `server_name` prefixes log lines ("grader", "env"). `log` is shared with the handlers'
  // own refusals.
  MalformedRequestInterceptorFactory(const char* server_name, std::shared_ptr<RateLimitedLog> log,
                                     CallerCheck check_caller);

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override;

 private:
  const char* const server_name_;
  const std::shared_ptr<RateLimitedLog> log_;
  const CallerCheck check_caller_;
};

// Routes libprotobuf's own log lines through a RateLimitedLog (at most 5 lines per 10 s per
// source line of protobuf, then one saying how many were dropped) to the process's log, and
// remembers, per thread, the field of the last "String field '...' contains invalid UTF-8 data
// when parsing" line for the interceptor above (gRPC parses a request and runs the
// interceptors on one thread). Idempotent and thread-safe (SetLogHandler is called once).
void RateLimitProtobufLogs();

// Protobuf log lines RateLimitProtobufLogs' handler dropped so far (tests, metrics).
int64_t SuppressedProtobufLogLines();

}  // namespace hb
