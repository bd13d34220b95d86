#include "common/rpc/malformed_request.h"

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/rpc/grpc_status.h"

namespace hb {
namespace {

using Hook = grpc::experimental::InterceptionHookPoints;

class MalformedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  // `check` belongs to the factory, which the server keeps for its lifetime.
  MalformedRequestInterceptor(grpc::experimental::ServerRpcInfo* info, const char* server_name,
                              std::shared_ptr<RateLimitedLog> log,
                              const MalformedRequestInterceptorFactory::CallerCheck& check)
      : method_(info->method()), server_name_(server_name), log_(std::move(log)), check_(check) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_INITIAL_METADATA)) {
      authorization_ = Authorization(methods);
    }
    // A unary request arrives with the call's initial metadata, in one batch; the server hands
    // interceptors a null message when it did not deserialize. (On a stream a null message in
    // a later batch is only the end of the stream.)
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_INITIAL_METADATA) &&
        methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      malformed_ = true;
    }
    if (malformed_ && methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      methods->ModifySendStatus(ToGrpcStatus(Refusal()));
    }
    methods->Proceed();
  }

 private:
  static std::string Authorization(grpc::experimental::InterceptorBatchMethods* methods) {
    std::multimap<grpc::string_ref, grpc::string_ref>* metadata = methods->GetRecvInitialMetadata();
    if (metadata == nullptr) return "";
    auto it = metadata->find("authorization");
    return it == metadata->end() ? "" : std::string(it->second.data(), it->second.size());
  }

  // What the caller is told, logged rate-limited.
  absl::Status Refusal() const {
    absl::Status status = check_(authorization_);
    if (status.ok()) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "malformed request for ", method_,
          ": the bytes do not parse as its request message (not protobuf, or a string field "
          "that is not valid UTF-8)"));
    }
    const std::string kind = absl::StrCat(method_.substr(method_.rfind('/') + 1), " ",
                                          absl::StatusCodeToString(status.code()));
    if (std::optional<std::string> suffix = log_->Admit(kind)) {
      HB_LOG_WARN("{}: {} refused{}: {}", server_name_, kind, *suffix,
                  std::string(status.message()));
    }
    return status;
  }

  const std::string method_;
  const char* const server_name_;
  const std::shared_ptr<RateLimitedLog> log_;
  const MalformedRequestInterceptorFactory::CallerCheck& check_;
  std::string authorization_;
  bool malformed_ = false;
};

}  // namespace

MalformedRequestInterceptorFactory::MalformedRequestInterceptorFactory(
    const char* server_name, std::shared_ptr<RateLimitedLog> log, CallerCheck check_caller)
    : server_name_(server_name), log_(std::move(log)), check_caller_(std::move(check_caller)) {}

grpc::experimental::Interceptor* MalformedRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new MalformedRequestInterceptor(info, server_name_, log_, check_caller_);
}

}  // namespace hb
