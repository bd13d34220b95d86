#include "common/rpc/malformed_request.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/base/clock.h"
#include "common/base/logging.h"
#include "common/base/tsan_annotations.h"
#include "common/rpc/grpc_status.h"
#include "google/protobuf/stubs/logging.h"

namespace hb {
namespace {

using Hook = grpc::experimental::InterceptionHookPoints;

std::atomic<int64_t> suppressed_protobuf_lines{0};

// The field of the last invalid-UTF-8 parse on this thread ("" when none since it was taken).
thread_local std::string invalid_utf8_field;

// "String field 'a.B.c' contains invalid UTF-8 data when parsing a protocol buffer. ..." ->
// "a.B.c"; "" for any other message.
std::string InvalidUtf8Field(absl::string_view message) {
  constexpr absl::string_view kPrefix = "String field '";
  constexpr absl::string_view kSuffix = "' contains invalid UTF-8 data when parsing";
  if (!absl::StartsWith(message, kPrefix)) return "";
  const size_t end = message.find(kSuffix);
  if (end == absl::string_view::npos) return "";
  return std::string(message.substr(kPrefix.size(), end - kPrefix.size()));
}

void RateLimitedProtobufLog(google::protobuf::LogLevel level, const char* filename, int line,
                            const std::string& message) {
  if (std::string field = InvalidUtf8Field(message); !field.empty()) {
    invalid_utf8_field = std::move(field);
  }
  static RateLimitedLog* log =
      new RateLimitedLog(Clock::Real(), RateLimitedLogOptions{5, absl::Seconds(10)});
  const std::optional<std::string> suffix = log->Admit(absl::StrCat(filename, ":", line));
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

class MalformedRequestInterceptor final : public grpc::experimental::Interceptor {
 public:
  // `check` belongs to the factory, which the server keeps for its lifetime.
  MalformedRequestInterceptor(grpc::experimental::ServerRpcInfo* info, const char* server_name,
                              std::shared_ptr<RateLimitedLog> log,
                              const MalformedRequestInterceptorFactory::CallerCheck& check)
      : method_(info->method()), server_name_(server_name), log_(std::move(log)), check_(check) {
    TsanRelease(this);
  }

  // gRPC runs a call's interceptor hooks one batch after another, but on whichever of its
  // threads the batch completed: the hand-off is inside gRPC core, which TSan cannot see, so
  // each hook states it (construction -> first hook -> next hook).
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    TsanAcquire(this);
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
      // Set by RateLimitedProtobufLog when this parse, just now on this thread, failed on a
      // string field; taken (cleared) so that no later request sees it.
      invalid_field_ = std::exchange(invalid_utf8_field, "");
    }
    if (malformed_ && methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      methods->ModifySendStatus(ToGrpcStatus(Refusal()));
    }
    TsanRelease(this);
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
    if (status.ok() && !invalid_field_.empty()) {
      status = absl::InvalidArgumentError(absl::StrCat("malformed request for ", method_,
                                                       ": string field '", invalid_field_,
                                                       "' is not valid UTF-8; send the text "
                                                       "UTF-8 encoded"));
    } else if (status.ok()) {
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
  std::string invalid_field_;
};

}  // namespace

MalformedRequestInterceptorFactory::MalformedRequestInterceptorFactory(
    const char* server_name, std::shared_ptr<RateLimitedLog> log, CallerCheck check_caller)
    : server_name_(server_name), log_(std::move(log)), check_caller_(std::move(check_caller)) {
  RateLimitProtobufLogs();
}

grpc::experimental::Interceptor* MalformedRequestInterceptorFactory::CreateServerInterceptor(
    grpc::experimental::ServerRpcInfo* info) {
  return new MalformedRequestInterceptor(info, server_name_, log_, check_caller_);
}

void RateLimitProtobufLogs() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&RateLimitedProtobufLog); });
}

int64_t SuppressedProtobufLogLines() { return suppressed_protobuf_lines.load(); }

}  // namespace hb
