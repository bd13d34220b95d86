#include "tests/testing/raw_grpc_call.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace hb::testing {

grpc::Status RawUnaryCall(grpc::Channel& channel, const std::string& method,
                          const std::string& request_bytes, std::string* response_bytes,
                          const std::string& authorization) {
  grpc::GenericStub stub(std::shared_ptr<grpc::Channel>(&channel, [](auto*) {}));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  // The callback runs on a gRPC thread; gRPC's own hand-off of the call is invisible to TSan
  // (Debian's libgrpc is not instrumented), so `status` is written and read under `mu`, and
  // main's unlock after constructing it orders that before the callback's write.
  absl::Mutex mu;
  grpc::Status status;
  { absl::MutexLock publish(&mu); }
  absl::Notification done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    absl::MutexLock lock(&mu);
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  absl::MutexLock lock(&mu);
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

}  // namespace hb::testing
