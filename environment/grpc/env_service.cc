#include "environment/grpc/env_service.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/logging.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "common/rpc/grpc_status.h"
#include "google/protobuf/arena.h"
#include "security/transport_security.h"

namespace hb::env {
namespace {

grpc::ServerUnaryReactor* Finished(grpc::CallbackServerContext* context,
                                   const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

void SummaryToProto(const TaskSummary& task, env_v1::TaskSummary* out) {
  out->set_task_id(task.task_id);
  out->set_split(task.split);
  out->set_index(task.index);
  for (const std::string& tag : task.tags) out->add_tags(tag);
}

// The messages of one Submit and the arena they live on.
class SubmitArenaHolder final
    : public grpc::MessageHolder<env_v1::SubmitRequest, env_v1::SubmitResponse> {
 public:
  SubmitArenaHolder() : arena_(Options(initial_block_, sizeof(initial_block_))) {
    set_request(google::protobuf::Arena::CreateMessage<env_v1::SubmitRequest>(&arena_));
    set_response(google::protobuf::Arena::CreateMessage<env_v1::SubmitResponse>(&arena_));
  }
  void Release() override { delete this; }

 private:
  static google::protobuf::ArenaOptions Options(char* block, size_t size) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = size;
    return options;
  }
  // A cached result of ~12 items fits; a bigger one takes more blocks from the heap.
  alignas(8) char initial_block_[8192];
  google::protobuf::Arena arena_;
};

}  // namespace

grpc::MessageHolder<env_v1::SubmitRequest, env_v1::SubmitResponse>*
SubmitArenaAllocator::AllocateMessages() {
  return new SubmitArenaHolder();
}

TaskRef TaskRefFromProto(const env_v1::TaskRef& ref) {
  TaskRef out;
  out.task_id = ref.task_id();
  out.split = ref.split();
  // The index is read only with a split (as before splits could overlap). proto3 cannot tell
  // index 0 from none: beside a task_id only a non-zero index is read (and refused).
  if (!ref.split().empty() && (ref.task_id().empty() || ref.index() != 0)) {
    out.index = ref.index();
  }
  return out;
}

grpc::ServerUnaryReactor* EnvServiceImpl::ListSplits(grpc::CallbackServerContext* context,
                                                     const env_v1::ListSplitsRequest*,
                                                     env_v1::ListSplitsResponse* response) {
  auto permit = Admit(*context);
  if (!permit.ok()) return Refuse(context, "ListSplits", permit.status());
  for (const SplitInfo& split : env_.ListSplits()) {
    env_v1::SplitInfo* out = response->add_splits();
    out->set_name(split.name);
    out->set_task_count(split.task_count);
  }
  return Finished(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* EnvServiceImpl::ListTasks(grpc::CallbackServerContext* context,
                                                    const env_v1::ListTasksRequest* request,
                                                    env_v1::ListTasksResponse* response) {
  auto permit = Admit(*context);
  if (!permit.ok()) return Refuse(context, "ListTasks", permit.status());
  const int64_t stop = request->stop() == 0 ? std::numeric_limits<int64_t>::max() : request->stop();
  absl::StatusOr<std::vector<TaskSummary>> tasks =
      env_.ListTasks(request->split(), request->start(), stop);
  if (tasks.ok()) {
    for (const TaskSummary& task : *tasks) SummaryToProto(task, response->add_tasks());
  }
  return Finished(context, tasks.status());
}

grpc::ServerUnaryReactor* EnvServiceImpl::GetTask(grpc::CallbackServerContext* context,
                                                  const env_v1::GetTaskRequest* request,
                                                  env_v1::GetTaskResponse* response) {
  auto permit = Admit(*context);
  if (!permit.ok()) return Refuse(context, "GetTask", permit.status());
  absl::StatusOr<TaskPrompt> task = env_.GetTask(TaskRefFromProto(request->task()));
  if (task.ok()) {
    SummaryToProto(task->task, response->mutable_task());
    for (const Message& message : task->messages) {
      env_v1::Message* out = response->add_messages();
      out->set_role(message.role);
      out->set_content(message.content);
    }
    response->set_prompt_text(task->prompt_text);
  }
  return Finished(context, task.status());
}

grpc::ServerUnaryReactor* EnvServiceImpl::Submit(grpc::CallbackServerContext* context,
                                                 const env_v1::SubmitRequest* request,
                                                 env_v1::SubmitResponse* response) {
  auto permit = Admit(*context);
  if (!permit.ok()) return Refuse(context, "Submit", permit.status());
  if (absl::Status valid = CheckSubmission(*request); !valid.ok()) {
    return Refuse(context, "Submit", valid);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  env_.Submit(TaskRefFromProto(request->task()), request->reply(), DeadlineOf(*context),
              [reactor, request, response,
               permit = *std::move(permit)](absl::StatusOr<SubmitResult> result) {
                if (result.ok()) {
                  SubmitResultToProto(*result, response);
                  response->set_request_id(request->request_id());
                }
                permit->Release();
                reactor->Finish(ToGrpcStatus(result.status()));
              });
  return reactor;
}

grpc::ServerUnaryReactor* EnvServiceImpl::SubmitBatch(grpc::CallbackServerContext* context,
                                                      const env_v1::SubmitBatchRequest* request,
                                                      env_v1::SubmitBatchResponse* response) {
  auto permit = Admit(*context);
  if (!permit.ok()) return Refuse(context, "SubmitBatch", permit.status());
  for (int i = 0; i < request->submissions_size(); ++i) {
    if (absl::Status valid = CheckSubmission(request->submissions(i)); !valid.ok()) {
      return Refuse(context, "SubmitBatch",
                    WithMessagePrefix(valid, absl::StrCat("submissions[", i, "]: ")));
    }
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const int n = request->submissions_size();
  if (n == 0) {
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  // Each callback fills its own slot; the last one to arrive finishes the RPC.
  for (int i = 0; i < n; ++i) response->add_results();
  auto remaining = std::make_shared<std::atomic<int>>(n);
  const absl::Time deadline = DeadlineOf(*context);
  std::shared_ptr<ConcurrencyLimit::Permit> held = *std::move(permit);
  for (int i = 0; i < n; ++i) {
    const env_v1::SubmitRequest& submission = request->submissions(i);
    env_v1::SubmitResult* slot = response->mutable_results(i);
    env_.Submit(TaskRefFromProto(submission.task()), submission.reply(), deadline,
                [reactor, remaining, slot, &submission, held](absl::StatusOr<SubmitResult> result) {
                  if (result.ok()) {
                    SubmitResultToProto(*result, slot->mutable_response());
                    slot->mutable_response()->set_request_id(submission.request_id());
                  } else {
                    slot->mutable_error()->set_code(static_cast<int>(result.status().code()));
                    slot->mutable_error()->set_message(std::string(result.status().message()));
                  }
                  if (remaining->fetch_sub(1) == 1) {
                    held->Release();
                    reactor->Finish(grpc::Status::OK);
                  }
                });
  }
  return reactor;
}

EnvServiceImpl::EnvServiceImpl(Environment& env, const BearerTokens& tokens,
                               EnvServiceOptions options, Clock& clock)
    : env_(env),
      tokens_(tokens),
      options_(options),
      clock_(clock),
      rpcs_(options.max_concurrent_rpcs, options.busy_retry_delay,
            "RPCs in progress (--max-concurrent-rpcs)"),
      refused_log_(std::make_shared<RateLimitedLog>(clock, options.refused_log)) {
  SetMessageAllocatorFor_Submit(&submit_allocator_);
}

absl::StatusOr<std::shared_ptr<ConcurrencyLimit::Permit>> EnvServiceImpl::Admit(
    const grpc::CallbackServerContext& context) {
  HB_RETURN_IF_ERROR(CheckGrpcCaller(context, tokens_));
  HB_ASSIGN_OR_RETURN(ConcurrencyLimit::Permit permit, rpcs_.TryAcquire(1));
  return std::make_shared<ConcurrencyLimit::Permit>(std::move(permit));
}

absl::Status EnvServiceImpl::CheckSubmission(const env_v1::SubmitRequest& request) const {
  const size_t limit = options_.max_field_bytes;
  HB_RETURN_IF_ERROR(
      CheckFieldSize("request_id", request.request_id().size(), limit, "max_field_bytes"));
  HB_RETURN_IF_ERROR(
      CheckFieldSize("task.task_id", request.task().task_id().size(), limit, "max_field_bytes"));
  return CheckFieldSize("task.split", request.task().split().size(), limit, "max_field_bytes");
}

grpc::ServerUnaryReactor* EnvServiceImpl::Refuse(grpc::CallbackServerContext* context,
                                                 const char* method, const absl::Status& status) {
  const std::string kind = absl::StrCat(method, " ", absl::StatusCodeToString(status.code()));
  if (std::optional<std::string> suffix = refused_log_->Admit(kind)) {
    HB_LOG_WARN("env: {} refused{}: {}", kind, *suffix,
                std::string(status.message().substr(0, 300)));
  }
  return Finished(context, status);
}

absl::Time EnvServiceImpl::DeadlineOf(const grpc::CallbackServerContext& context) const {
  std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return clock_.Now() + options_.default_deadline;
  }
  return absl::FromChrono(deadline);
}

}  // namespace hb::env
