#include "common/rpc/server_reflection.h"

#include <algorithm>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace hb {
namespace {

namespace v1 = ::grpc::reflection::v1;
using ::google::protobuf::Descriptor;
using ::google::protobuf::DescriptorPool;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::FileDescriptor;
using ::google::protobuf::FileDescriptorProto;

// Appends `file` after its dependencies, each file once.
void AddFileAndDependencies(const FileDescriptor* file, absl::flat_hash_set<std::string>& seen,
                            v1::FileDescriptorResponse* out) {
  if (!seen.insert(file->name()).second) return;
  for (int i = 0; i < file->dependency_count(); ++i) {
    AddFileAndDependencies(file->dependency(i), seen, out);
  }
  FileDescriptorProto proto;
  file->CopyTo(&proto);
  proto.SerializeToString(out->add_file_descriptor_proto());
}

void SetError(grpc::StatusCode code, std::string message, v1::ServerReflectionResponse* out) {
  out->mutable_error_response()->set_error_code(code);
  out->mutable_error_response()->set_error_message(std::move(message));
}

void AnswerFile(const FileDescriptor* file, const std::string& what,
                v1::ServerReflectionResponse* out) {
  if (file == nullptr) return SetError(grpc::StatusCode::NOT_FOUND, what + " not found", out);
  absl::flat_hash_set<std::string> seen;
  AddFileAndDependencies(file, seen, out->mutable_file_descriptor_response());
}

void AnswerExtensionNumbers(const DescriptorPool& pool, const std::string& type,
                            v1::ServerReflectionResponse* out) {
  const Descriptor* descriptor = pool.FindMessageTypeByName(type);
  if (descriptor == nullptr) {
    return SetError(grpc::StatusCode::NOT_FOUND, absl::StrCat("type ", type, " not found"), out);
  }
  std::vector<const FieldDescriptor*> extensions;
  pool.FindAllExtensions(descriptor, &extensions);
  v1::ExtensionNumberResponse* numbers = out->mutable_all_extension_numbers_response();
  numbers->set_base_type_name(type);
  for (const FieldDescriptor* extension : extensions) {
    numbers->add_extension_number(extension->number());
  }
}

// One stream: answers each request in order until the client half-closes.
class ReflectionReactor final
    : public grpc::ServerBidiReactor<v1::ServerReflectionRequest, v1::ServerReflectionResponse> {
 public:
  explicit ReflectionReactor(std::vector<std::string> services) : services_(std::move(services)) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Finish(grpc::Status::OK);
    response_ = AnswerReflection(request_, services_, *DescriptorPool::generated_pool());
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  const std::vector<std::string> services_;
  v1::ServerReflectionRequest request_;
  v1::ServerReflectionResponse response_;
};

class ReflectionV1Service final : public v1::ServerReflection::CallbackService {
 public:
  // The server's own list (grpc::Server::services_), known once the server is built.
  void SetServices(const std::vector<std::string>* services) {
    absl::MutexLock lock(&mu_);
    services_ = services;
  }

  grpc::ServerBidiReactor<v1::ServerReflectionRequest, v1::ServerReflectionResponse>*
  ServerReflectionInfo(grpc::CallbackServerContext*) override {
    absl::MutexLock lock(&mu_);
    return new ReflectionReactor(services_ != nullptr ? *services_ : std::vector<std::string>{});
  }

 private:
  absl::Mutex mu_;
  const std::vector<std::string>* services_ ABSL_GUARDED_BY(mu_) = nullptr;
};

class ReflectionV1Plugin final : public grpc::ServerBuilderPlugin {
 public:
  static constexpr char kName[] = "hb_server_reflection_v1";

  std::string name() override { return kName; }
  void InitServer(grpc::ServerInitializer* si) override { si->RegisterService(service_); }
  void Finish(grpc::ServerInitializer* si) override { service_->SetServices(si->GetServiceList()); }
  void ChangeArguments(const std::string&, void*) override {}

 private:
  const std::shared_ptr<ReflectionV1Service> service_ = std::make_shared<ReflectionV1Service>();
};

class Option final : public grpc::ServerBuilderOption {
 public:
  explicit Option(bool enabled) : enabled_(enabled) {}

  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    const std::string v1alpha = grpc::reflection::ProtoServerReflectionPlugin().name();
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [&](const auto& plugin) {
                                    return plugin->name() == v1alpha ||
                                           plugin->name() == ReflectionV1Plugin::kName;
                                  }),
                   plugins->end());
    if (!enabled_) return;
    plugins->push_back(std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>());
    plugins->push_back(std::make_unique<ReflectionV1Plugin>());
  }

 private:
  const bool enabled_;
};

}  // namespace

std::unique_ptr<grpc::ServerBuilderOption> ReflectionOption(bool enabled) {
  return std::make_unique<Option>(enabled);
}

v1::ServerReflectionResponse AnswerReflection(const v1::ServerReflectionRequest& request,
                                              const std::vector<std::string>& services,
                                              const DescriptorPool& pool) {
  v1::ServerReflectionResponse out;
  out.set_valid_host(request.host());
  *out.mutable_original_request() = request;
  switch (request.message_request_case()) {
    case v1::ServerReflectionRequest::kFileByFilename:
      AnswerFile(pool.FindFileByName(request.file_by_filename()),
                 absl::StrCat("file ", request.file_by_filename()), &out);
      break;
    case v1::ServerReflectionRequest::kFileContainingSymbol:
      AnswerFile(pool.FindFileContainingSymbol(request.file_containing_symbol()),
                 absl::StrCat("symbol ", request.file_containing_symbol()), &out);
      break;
    case v1::ServerReflectionRequest::kFileContainingExtension: {
      const v1::ExtensionRequest& ext = request.file_containing_extension();
      const Descriptor* type = pool.FindMessageTypeByName(ext.containing_type());
      const FieldDescriptor* field =
          type == nullptr ? nullptr : pool.FindExtensionByNumber(type, ext.extension_number());
      AnswerFile(field == nullptr ? nullptr : field->file(),
                 absl::StrCat("extension ", ext.extension_number(), " of ", ext.containing_type()),
                 &out);
      break;
    }
    case v1::ServerReflectionRequest::kAllExtensionNumbersOfType:
      AnswerExtensionNumbers(pool, request.all_extension_numbers_of_type(), &out);
      break;
    case v1::ServerReflectionRequest::kListServices:
      for (const std::string& name : services) {
        out.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case v1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      SetError(grpc::StatusCode::INVALID_ARGUMENT, "the request names nothing to look up", &out);
      break;
  }
  return out;
}

}  // namespace hb
