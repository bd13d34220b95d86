#include "tests/testing/raw_grpc_call.h"

#include <chrono>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace hb::testing {
namespace {

// Guards every call's status and done flag (held only to write or wait for them).
absl::Mutex& CallMutex() {
  ABSL_CONST_INIT static absl::Mutex mu(absl::kConstInit);
  return mu;
}

}  // namespace

grpc::Status RawUnaryCall(grpc::Channel& channel, const std::string& method,
                          const std::string& request_bytes, std::string* response_bytes,
                          const std::string& authorization) {
  grpc::GenericStub stub(std::shared_ptr<grpc::Channel>(&channel, [](auto*) {}));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  // The callback runs on a gRPC thread, and gRPC's own hand-off of the call is invisible to TSan
  // (Debian's libgrpc is not instrumented). So the callback touches nothing this call
  // constructs before main has released `CallMutex()`, which is constant-initialized (no
  // constructor write for TSan to see racing with the callback's lock): main's unlock just
  // below orders `status` and `done` before the callback's writes. A Mutex or Notification
  // built here would race, in TSan's eyes, with the callback's first lock of it.
  grpc::Status status;
  bool done = false;
  { absl::MutexLock publish(&CallMutex()); }
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    absl::MutexLock lock(&CallMutex());
    status = std::move(s);
    done = true;
  });
  absl::MutexLock lock(&CallMutex());
  CallMutex().Await(absl::Condition(&done));
  std::vector<grpc::Slice> slices;
  if (status.ok() && response.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

}  // namespace hb::testing
