// gRPC server reflection, opt-in per server, in both versions clients ask for:
// grpc.reflection.v1alpha (gRPC's own plugin) and grpc.reflection.v1 (here: gRPC 1.51 ships only
// v1alpha, while grpcurl, Postman and grpc-java's tools ask for v1 first).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "grpc/reflection/v1/reflection.pb.h"
#include "grpcpp/impl/server_builder_option.h"

namespace hb {

// A ServerBuilder option that turns reflection (v1alpha and v1) on or off for the server it is
// set on only: unlike grpc::reflection::InitProtoReflectionServerBuilderPlugin(), it does not
// change the servers a process builds afterwards (tests build many). Reflection lists every
// service and its schema to any caller that passed authentication, hence off by default.
std::unique_ptr<grpc::ServerBuilderOption> ReflectionOption(bool enabled);

// The v1 answer to one request, from `pool` (the generated pool in servers) and the server's
// service names; what ReflectionOption's v1 service sends. File requests get the file and its
// transitive dependencies (dependencies first, as protoc orders them); a name `pool` does not
// know gets an error_response with NOT_FOUND; an empty request INVALID_ARGUMENT. Thread-safe.
grpc::reflection::v1::ServerReflectionResponse AnswerReflection(
    const grpc::reflection::v1::ServerReflectionRequest& request,
    const std::vector<std::string>& services, const google::protobuf::DescriptorPool& pool);

}  // namespace hb
