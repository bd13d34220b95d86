#include "grader_service/grader_service_impl.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/base/cancellation.h"
#include "common/base/logging.h"
#include "common/base/status_context.h"
#include "common/base/status_macros.h"
#include "common/grading/scoring.h"
#include "common/rpc/grpc_status.h"
#include "grader/grader_proto.h"
#include "security/transport_security.h"

namespace hb {
namespace {

constexpr char kGradeItem[] = "GradeItem";
constexpr char kGradeReply[] = "GradeReply";
constexpr char kGetInfo[] = "GetInfo";

// The client's deadline, or `fallback` from now when it set none.
absl::Time DeadlineOf(const grpc::CallbackServerContext* context, const Clock& clock,
                      absl::Duration fallback) {
  std::chrono::system_clock::time_point deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return clock.Now() + fallback;
  return absl::FromChrono(deadline);
}

// The message contents plus the reply: what every rendered prompt of the request holds.
size_t ConversationBytes(const google::protobuf::RepeatedPtrField<grader_v1::Message>& messages,
                         const std::string& reply) {
  size_t bytes = reply.size();
  for (const grader_v1::Message& m : messages) bytes += m.content().size();
  return bytes;
}

}  // namespace

namespace grader_service_internal {

// A unary reactor whose cancellation reaches the grading work through a token. It releases its
// admission permits when it completes, just before the reply goes out (a client that starts its
// next RPC the moment this reply arrives must find the slot free, as hb-env's service does), and
// deletes itself when gRPC is done with it.
class GraderReactor final : public grpc::ServerUnaryReactor {
 public:
  GraderReactor(const char* method, Clock& clock, GraderMetrics* metrics,
                std::shared_ptr<RateLimitedLog> refused_log)
      : method_(method),
        clock_(clock),
        metrics_(metrics),
        refused_log_(std::move(refused_log)),
        start_(clock.Now()) {
    if (metrics_ != nullptr) metrics_->RpcStarted(method_);
  }

  const std::shared_ptr<CancellationToken>& token() const { return token_; }

  // Keeps `permit` until the RPC completes.
  void Hold(ConcurrencyLimit::Permit permit) { permits_.push_back(std::move(permit)); }

  // Finishes the RPC. Called once; nothing of `this` may be touched after Finish.
  void Complete(const absl::Status& status) {
    if (metrics_ != nullptr) metrics_->RpcFinished(method_, status.code(), clock_.Now() - start_);
    permits_.clear();
    Finish(ToGrpcStatus(status));
  }

  // Complete for a request refused before any work started, with a rate-limited log line.
  void Refuse(const absl::Status& status) {
    const std::string kind = absl::StrCat(method_, " ", absl::StatusCodeToString(status.code()));
    if (std::optional<std::string> suffix = refused_log_->Admit(kind)) {
      HB_LOG_WARN("grader: {} refused{}: {}", kind, *suffix,
                  std::string(status.message().substr(0, 300)));
    }
    Complete(status);
  }

  void OnCancel() override { token_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  const char* const method_;
  Clock& clock_;
  GraderMetrics* const metrics_;
  const std::shared_ptr<RateLimitedLog> refused_log_;
  const absl::Time start_;
  const std::shared_ptr<CancellationToken> token_ = std::make_shared<CancellationToken>();
  std::vector<ConcurrencyLimit::Permit> permits_;
};

}  // namespace grader_service_internal

using grader_service_internal::GraderReactor;

namespace {

// Collects the verdicts of one GradeReply.
struct ReplyFanOut {
  GraderReactor* reactor;
  const grader_v1::GradeReplyRequest* request;
  grader_v1::GradeReplyResponse* response;
  Scheduler* completions;
  std::vector<RubricItem> items;

  absl::Mutex mu;
  std::vector<std::optional<ItemVerdict>> verdicts ABSL_GUARDED_BY(mu);
  size_t remaining ABSL_GUARDED_BY(mu) = 0;
  absl::Status first_error ABSL_GUARDED_BY(mu);
  bool failed ABSL_GUARDED_BY(mu) = false;

  // Records item `index`; the last one to arrive finishes the RPC.
  void Done(size_t index, absl::StatusOr<ItemVerdict> result) {
    bool cancel_others = false;
    bool last = false;
    {
      absl::MutexLock lock(&mu);
      if (result.ok()) {
        verdicts[index] = *std::move(result);
      } else {
        // A cancellation we caused is not the interesting error; the caller's own cancel is
        // reported when nothing else failed.
        bool ours = failed && result.status().code() == absl::StatusCode::kCancelled;
        if (!ours && (first_error.ok() || first_error.code() == absl::StatusCode::kCancelled)) {
          first_error =
              WithMessagePrefix(result.status(), absl::StrCat("rubric item ", index, ": "));
        }
        cancel_others = !failed;
        failed = true;
      }
      last = --remaining == 0;
    }
    if (cancel_others) reactor->token()->Cancel();
    if (!last) return;
    // The last verdict arrives on the upstream client's thread: scoring and building the
    // response happen elsewhere, so one large rubric never stalls every other call.
    if (completions != nullptr) {
      completions->Schedule(absl::ZeroDuration(), [this] { FinishAll(); });
    } else {
      FinishAll();
    }
  }

  void FinishAll() {
    absl::Status status;
    {
      absl::MutexLock lock(&mu);
      status = first_error;
      if (status.ok()) {
        std::vector<bool> met;
        ChatUsage total;
        for (size_t i = 0; i < verdicts.size(); ++i) {
          ItemVerdictToProto(*verdicts[i], response->add_verdicts());
          response->mutable_verdicts(static_cast<int>(i))
              ->set_request_id(absl::StrCat(request->request_id(), "/", i));
          met.push_back(verdicts[i]->verdict.criteria_met);
          if (!verdicts[i]->from_cache) total += verdicts[i]->usage;
        }
        UsageToProto(total, response->mutable_usage());
        absl::StatusOr<OrderedMetrics> scores =
            ScoreTask(request->request_id(), /*example_tags=*/{}, items, met);
        if (!scores.ok()) {
          status = scores.status();
        } else {
          for (const auto& [name, value] : *scores) {
            if (name == "overall_score") {
              response->set_score(value);
            } else {
              (*response->mutable_tag_scores())[name] = value;
            }
          }
        }
      }
    }
    if (!status.ok()) response->Clear();
    GraderReactor* r = reactor;
    delete this;
    r->Complete(status);
  }
};

}  // namespace

GraderServiceImpl::GraderServiceImpl(hb::Grader& grader, Clock& clock, GraderMetrics* metrics,
                                     const BearerTokens* tokens, GraderServiceOptions options)
    : grader_(grader),
      clock_(clock),
      metrics_(metrics),
      tokens_(tokens),
      options_(options),
      rpcs_(options.max_concurrent_rpcs, options.busy_retry_delay,
            "RPCs in progress (--max-concurrent-rpcs)"),
      items_(options.max_items_in_progress, options.busy_retry_delay,
             "rubric items in progress (--max-upstream-in-flight + --max-upstream-queue)"),
      refused_log_(std::make_shared<RateLimitedLog>(clock, options.refused_log)) {}

absl::Status GraderServiceImpl::Admit(grpc::CallbackServerContext& context, size_t items,
                                      GraderReactor& reactor) {
  if (tokens_ != nullptr) HB_RETURN_IF_ERROR(CheckGrpcCaller(context, *tokens_));
  absl::StatusOr<ConcurrencyLimit::Permit> rpc = rpcs_.TryAcquire(1);
  if (!rpc.ok()) return rpc.status();
  absl::StatusOr<ConcurrencyLimit::Permit> work = items_.TryAcquire(static_cast<int64_t>(items));
  if (!work.ok()) return work.status();
  reactor.Hold(*std::move(rpc));
  reactor.Hold(*std::move(work));
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* GraderServiceImpl::GradeItem(grpc::CallbackServerContext* context,
                                                       const grader_v1::GradeItemRequest* request,
                                                       grader_v1::GradeItemResponse* response) {
  auto* reactor = new GraderReactor(kGradeItem, clock_, metrics_, refused_log_);
  // Before any copy of the request: an oversized one costs nothing more than its receipt.
  if (absl::Status budget =
          grader_.CheckPromptBudget(ConversationBytes(request->conversation(), request->reply()));
      !budget.ok()) {
    reactor->Refuse(budget);
    return reactor;
  }
  const GradeItemInput input = GradeItemInputFromProto(*request);
  absl::StatusOr<std::shared_ptr<const PreparedReply>> prepared =
      absl::InternalError("not admitted");
  absl::Status admitted = Admit(*context, 1, *reactor);
  if (admitted.ok()) {
    prepared = grader_.Prepare(input.conversation, input.reply, input.prompt_cache_key);
    admitted = prepared.ok() ? grader_.ValidateItem(**prepared, input.item, input.request_id)
                             : prepared.status();
  }
  if (!admitted.ok()) {
    reactor->Refuse(admitted);
    return reactor;
  }
  grader_.GradePrepared(*std::move(prepared), input.item, input.request_id,
                        DeadlineOf(context, clock_, options_.default_deadline), reactor->token(),
                        [reactor, request, response](absl::StatusOr<ItemVerdict> verdict) {
                          if (verdict.ok()) {
                            GradeItemResponseToProto(*verdict, request->request_id(), response);
                          }
                          reactor->Complete(verdict.status());
                        });
  return reactor;
}

grpc::ServerUnaryReactor* GraderServiceImpl::GetInfo(grpc::CallbackServerContext* context,
                                                     const grader_v1::GetInfoRequest* /*request*/,
                                                     grader_v1::GraderInfo* response) {
  auto* reactor = new GraderReactor(kGetInfo, clock_, metrics_, refused_log_);
  if (tokens_ != nullptr) {
    if (absl::Status caller = CheckGrpcCaller(*context, *tokens_); !caller.ok()) {
      reactor->Refuse(caller);
      return reactor;
    }
  }
  *response = options_.info;
  reactor->Complete(absl::OkStatus());
  return reactor;
}

absl::StatusOr<std::shared_ptr<const PreparedReply>> GraderServiceImpl::ValidateReply(
    const grader_v1::GradeReplyRequest& request, const std::vector<RubricItem>& items) const {
  const GraderLimits& limits = grader_.config().limits;
  if (items.empty()) return absl::InvalidArgumentError("no rubric items");
  if (items.size() > limits.max_rubric_items) {
    return absl::InvalidArgumentError(absl::StrCat("request has ", items.size(),
                                                   " rubric items; the limit is ",
                                                   limits.max_rubric_items, " (max_rubric_items)"));
  }
  double positive = 0;
  for (const RubricItem& item : items) {
    if (item.points > 0) positive += item.points;
  }
  if (!(positive > 0)) {
    return absl::InvalidArgumentError("the rubric has no item with positive points");
  }
  // The shared part once, then every item, so a bad request fails before any upstream call.
  absl::StatusOr<std::shared_ptr<const PreparedReply>> prepared = grader_.Prepare(
      ConversationFromProto(request.conversation()), request.reply(), request.prompt_cache_key());
  if (!prepared.ok()) return prepared.status();
  // Item ids are "<request_id>/<index>": the longest one bounds them all.
  const std::string longest_id = absl::StrCat(request.request_id(), "/", items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    absl::Status valid = grader_.ValidateItem(**prepared, items[i], i == 0 ? longest_id : "");
    if (!valid.ok()) return WithMessagePrefix(valid, absl::StrCat("rubric item ", i, ": "));
  }
  return prepared;
}

grpc::ServerUnaryReactor* GraderServiceImpl::GradeReply(grpc::CallbackServerContext* context,
                                                        const grader_v1::GradeReplyRequest* request,
                                                        grader_v1::GradeReplyResponse* response) {
  auto* reactor = new GraderReactor(kGradeReply, clock_, metrics_, refused_log_);
  if (absl::Status budget =
          grader_.CheckPromptBudget(ConversationBytes(request->conversation(), request->reply()));
      !budget.ok()) {
    reactor->Refuse(budget);
    return reactor;
  }
  auto* fan_out = new ReplyFanOut{reactor, request, response, options_.completions, {}};
  fan_out->items.reserve(static_cast<size_t>(request->rubric_items_size()));
  for (const grader_v1::RubricItem& item : request->rubric_items()) {
    fan_out->items.push_back(RubricItemFromProto(item));
  }
  const size_t n = fan_out->items.size();
  absl::StatusOr<std::shared_ptr<const PreparedReply>> prepared =
      absl::InternalError("not admitted");
  absl::Status admitted = Admit(*context, n, *reactor);
  if (admitted.ok()) prepared = ValidateReply(*request, fan_out->items);
  if (!admitted.ok() || !prepared.ok()) {
    delete fan_out;
    reactor->Refuse(admitted.ok() ? prepared.status() : admitted);
    return reactor;
  }
  {
    absl::MutexLock lock(&fan_out->mu);
    fan_out->verdicts.resize(n);
    fan_out->remaining = n;
  }
  const absl::Time deadline = DeadlineOf(context, clock_, options_.default_deadline);
  for (size_t i = 0; i < n; ++i) {
    grader_.GradePrepared(*prepared, fan_out->items[i], absl::StrCat(request->request_id(), "/", i),
                          deadline, reactor->token(),
                          [fan_out, i](absl::StatusOr<ItemVerdict> verdict) {
                            fan_out->Done(i, std::move(verdict));
                          });
  }
  return reactor;
}

}  // namespace hb
