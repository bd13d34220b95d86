#include "common/rpc/server_reflection.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/rpc/status.pb.h"
#include "gtest/gtest.h"
#include "healthbench/grader/v1/grader.pb.h"

namespace hb {
namespace {

namespace v1 = ::grpc::reflection::v1;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FileDescriptorProto;
using ::testing::ElementsAre;

v1::ServerReflectionResponse Ask(const v1::ServerReflectionRequest& request) {
  // Linked in, so in the generated pool.
  (void)healthbench::grader::v1::GradeReplyRequest::descriptor();
  (void)google::rpc::Status::descriptor();
  return AnswerReflection(request, {"a.B", "grpc.reflection.v1.ServerReflection"},
                          *DescriptorPool::generated_pool());
}

std::vector<std::string> FileNames(const v1::ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

TEST(AnswerReflectionTest, ListsTheServicesItIsGiven) {
  v1::ServerReflectionRequest request;
  request.set_host("h");
  request.set_list_services("");
  const v1::ServerReflectionResponse response = Ask(request);
  EXPECT_EQ(response.valid_host(), "h");
  EXPECT_EQ(response.original_request().host(), "h");
  ASSERT_EQ(response.list_services_response().service_size(), 2);
  EXPECT_EQ(response.list_services_response().service(0).name(), "a.B");
}

TEST(AnswerReflectionTest, AFileComesAfterItsDependencies) {
  v1::ServerReflectionRequest request;
  request.set_file_containing_symbol("google.rpc.Status");
  EXPECT_THAT(FileNames(Ask(request)),
              ElementsAre("google/protobuf/any.proto", "google/rpc/status.proto"));
  request.set_file_containing_symbol("healthbench.grader.v1.Grader");
  EXPECT_THAT(FileNames(Ask(request)), ElementsAre("healthbench/grader/v1/grader.proto"));
  request.set_file_by_filename("healthbench/grader/v1/grader.proto");
  EXPECT_THAT(FileNames(Ask(request)), ElementsAre("healthbench/grader/v1/grader.proto"));
}

TEST(AnswerReflectionTest, UnknownNamesAreNotFoundOnTheStream) {
  v1::ServerReflectionRequest request;
  request.set_file_containing_symbol("no.such.Service");
  v1::ServerReflectionResponse response = Ask(request);
  EXPECT_EQ(response.error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(response.error_response().error_message(), "symbol no.such.Service not found");
  request.set_file_by_filename("nope.proto");
  EXPECT_EQ(Ask(request).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  request.set_all_extension_numbers_of_type("no.such.Type");
  EXPECT_EQ(Ask(request).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  request.mutable_file_containing_extension()->set_containing_type("healthbench.grader.v1.Message");
  request.mutable_file_containing_extension()->set_extension_number(99);
  EXPECT_EQ(Ask(request).error_response().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Ask(v1::ServerReflectionRequest()).error_response().error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(AnswerReflectionTest, ExtensionNumbersOfAKnownType) {
  v1::ServerReflectionRequest request;
  request.set_all_extension_numbers_of_type("google.protobuf.FieldOptions");
  (void)google::protobuf::FieldOptions::descriptor();
  const v1::ServerReflectionResponse response = Ask(request);
  EXPECT_FALSE(response.has_error_response());
  EXPECT_EQ(response.all_extension_numbers_response().base_type_name(),
            "google.protobuf.FieldOptions");
}

}  // namespace
}  // namespace hb
