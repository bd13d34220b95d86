// MalformedRequestInterceptorFactory: gRPC's callback API answers a request whose bytes do not
// parse as the method's request message with UNIMPLEMENTED and no message, before any handler
// (and so before any token check) runs. Clients must not retry such a request, and must learn
// why; an unauthenticated caller must learn nothing. This interceptor, registered on a server,
// turns that answer into UNAUTHENTICATED when `check_caller` refuses the call's `authorization`
// metadata, else INVALID_ARGUMENT "malformed request for <method>: the bytes do not parse as its
// request message (not protobuf, or a string field that is not valid UTF-8)"; either is logged
// through `log` (kind "<Method> <CODE>", rate-limited, so a flood of malformed messages writes a
// few lines). One implementation for hb-grader and hb-env.
#pragma once

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

}  // namespace hb
