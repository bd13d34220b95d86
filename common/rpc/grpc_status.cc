#include "common/rpc/grpc_status.h"

#include <string>

#include "absl/strings/cord.h"
#include "google/rpc/status.pb.h"

namespace hb {

static_assert(static_cast<int>(grpc::StatusCode::UNAVAILABLE) ==
              static_cast<int>(absl::StatusCode::kUnavailable));
static_assert(static_cast<int>(grpc::StatusCode::UNAUTHENTICATED) ==
              static_cast<int>(absl::StatusCode::kUnauthenticated));

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(static_cast<int>(status.code()));
  google::rpc::Status details;
  status.ForEachPayload([&details](absl::string_view type_url, const absl::Cord& value) {
    google::protobuf::Any* any = details.add_details();
    any->set_type_url(std::string(type_url));
    any->set_value(std::string(value));
  });
  if (details.details_size() == 0) return grpc::Status(code, std::string(status.message()));
  details.set_code(static_cast<int>(status.code()));
  details.set_message(std::string(status.message()));
  return grpc::Status(code, std::string(status.message()), details.SerializeAsString());
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  absl::Status out(static_cast<absl::StatusCode>(static_cast<int>(status.error_code())),
                   status.error_message());
  google::rpc::Status details;
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    for (const google::protobuf::Any& any : details.details()) {
      out.SetPayload(any.type_url(), absl::Cord(any.value()));
    }
  }
  return out;
}

}  // namespace hb
