#include "orchestrator/run/batch_api.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/base/json_io.h"
#include "common/base/status_macros.h"
#include "llm/openai_llm_client.h"

namespace hb {
namespace {

constexpr char kBoundary[] = "hb-batch-3c1f0e6a9d2b4857";

bool RetryableHttp(int code) { return code == 408 || code == 409 || code == 429 || code >= 500; }

// error.message of an OpenAI error body, else the body's first 200 bytes.
std::string ServerMessage(const HttpResponse& response) {
  rapidjson::Document doc;
  if (ParseJson(response.body, doc).ok() && doc.IsObject()) {
    if (const rapidjson::Value* error = FindJsonMember(doc, "error");
        error != nullptr && error->IsObject()) {
      absl::StatusOr<std::string> message = JsonStringMember(*error, "message");
      if (message.ok()) return *message;
    }
  }
  return response.body.substr(0, 200);
}

std::string OptionalString(const rapidjson::Value& object, absl::string_view name) {
  const rapidjson::Value* v = FindJsonMember(object, name);
  return v != nullptr && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : "";
}

int64_t OptionalInt(const rapidjson::Value& object, absl::string_view name) {
  const rapidjson::Value* v = FindJsonMember(object, name);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : 0;
}

absl::StatusOr<BatchInfo> BatchFromJson(const rapidjson::Value& v) {
  if (!v.IsObject()) return absl::DataLossError("a batch is not a JSON object");
  BatchInfo info;
  info.id = OptionalString(v, "id");
  info.status = OptionalString(v, "status");
  if (info.id.empty() || info.status.empty()) {
    return absl::DataLossError("a batch object without 'id' or 'status'");
  }
  info.input_file_id = OptionalString(v, "input_file_id");
  info.output_file_id = OptionalString(v, "output_file_id");
  info.error_file_id = OptionalString(v, "error_file_id");
  if (const rapidjson::Value* counts = FindJsonMember(v, "request_counts");
      counts != nullptr && counts->IsObject()) {
    info.total = OptionalInt(*counts, "total");
    info.completed = OptionalInt(*counts, "completed");
    info.failed = OptionalInt(*counts, "failed");
  }
  return info;
}

// kFailedPrecondition when `response` is a final refusal (a 4xx other than 408/409/429), else
// OK.
absl::Status Refusal(const HttpResponse& response, const std::string& what,
                     const std::string& url) {
  const int code = response.status_code;
  if ((code >= 200 && code < 300) || RetryableHttp(code)) return absl::OkStatus();
  std::string fix;
  if (code == 401 || code == 403) {
    fix =
        "; check the API key (--llm-api-key-file or $OPENAI_API_KEY) and that it may use the "
        "Batch API";
  } else if (code == 413) {
    fix = "; the endpoint takes smaller files: lower --batch-max-file-bytes";
  }
  return absl::FailedPreconditionError(absl::StrCat("the Batch API refused ", what, " (", url,
                                                    "): HTTP ", code, ": ", ServerMessage(response),
                                                    fix));
}

}  // namespace

bool BatchInfo::Terminal() const {
  return status == "completed" || status == "expired" || status == "cancelled" ||
         status == "failed";
}

absl::StatusOr<BatchInfo> ParseBatchInfo(const std::string& body) {
  rapidjson::Document doc;
  if (!ParseJson(body, doc).ok()) return absl::DataLossError("a batch answer is not JSON");
  return BatchFromJson(doc);
}

BatchApi::BatchApi(HttpClient& http, Scheduler& scheduler, BatchApiOptions options)
    : http_(http), scheduler_(scheduler), options_(std::move(options)) {}

HttpRequest BatchApi::Request(const std::string& method, const std::string& path) const {
  HttpRequest request;
  request.method = method;
  request.url = absl::StrCat(options_.base_url, path);
  request.timeout = options_.request_timeout;
  if (!options_.api_key.empty()) {
    request.headers.emplace_back("Authorization", absl::StrCat("Bearer ", options_.api_key));
  }
  for (const auto& header : options_.headers) request.headers.push_back(header);
  return request;
}

absl::StatusOr<HttpResponse> BatchApi::Once(HttpRequest request) {
  absl::Notification done;
  absl::StatusOr<HttpResponse> result;
  http_.Post(std::move(request), [&](absl::StatusOr<HttpResponse> r) {
    result = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  if (result.ok() && result->Header(kSimulatorHeader) != nullptr) simulated_ = true;
  return result;
}

absl::StatusOr<HttpResponse> BatchApi::Call(HttpRequest request, const std::string& what,
                                            int max_attempts) {
  const std::string url = request.url;
  for (int attempt = 1;; ++attempt) {
    absl::StatusOr<HttpResponse> response = Once(request);
    std::optional<absl::Duration> retry_after;
    std::string failure;
    if (response.ok()) {
      const int code = response->status_code;
      if (code >= 200 && code < 300) return response;
      failure = absl::StrCat("HTTP ", code, ": ", ServerMessage(*response));
      HB_RETURN_IF_ERROR(Refusal(*response, what, url));
      retry_after = RetryAfterOf(*response);
    } else {
      failure = std::string(response.status().message());
    }
    if (attempt >= max_attempts) {
      return absl::UnavailableError(absl::StrCat(what, " (", url, ") failed after ", attempt,
                                                 " attempt(s); last failure: ", failure));
    }
    absl::Duration delay = BackoffCeiling(options_.retry, attempt);
    if (retry_after.has_value()) {
      delay = std::max(delay, std::min(*retry_after, options_.retry.max_retry_after));
    }
    absl::Notification wake;
    scheduler_.Schedule(delay, [&wake] { wake.Notify(); });
    wake.WaitForNotification();
  }
}

absl::Status BatchApi::Probe() {
  const std::string url = absl::StrCat(options_.base_url, "/batches?limit=1");
  absl::StatusOr<HttpResponse> response = Once(Request("GET", "/batches?limit=1"));
  if (!response.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot reach the Batch API at ", url, ": ",
                                                   response.status().message(),
                                                   "; check --llm-base-url"));
  }
  const int code = response->status_code;
  if (code >= 200 && code < 300) return absl::OkStatus();
  HB_RETURN_IF_ERROR(Refusal(*response, "GET /batches", url));
  return absl::UnavailableError(absl::StrCat("the Batch API at ", url, " answered HTTP ", code,
                                             ": ", ServerMessage(*response)));
}

absl::StatusOr<std::string> BatchApi::UploadFile(const std::string& path) {
  HttpRequest request = Request("POST", "/files");
  request.headers.emplace_back("Content-Type",
                               absl::StrCat("multipart/form-data; boundary=", kBoundary));
  const std::string name = path.substr(path.rfind('/') + 1);
  request.body_parts.push_back(HttpBodyPart::Bytes(absl::StrCat(
      "--", kBoundary, "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--",
      kBoundary, "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"", name,
      "\"\r\nContent-Type: application/jsonl\r\n\r\n")));
  request.body_parts.push_back(HttpBodyPart::File(path));
  request.body_parts.push_back(HttpBodyPart::Bytes(absl::StrCat("\r\n--", kBoundary, "--\r\n")));
  HB_ASSIGN_OR_RETURN(HttpResponse response,
                      Call(std::move(request), "POST /files", options_.retry.max_attempts));
  rapidjson::Document doc;
  std::string id;
  if (ParseJson(response.body, doc).ok() && doc.IsObject()) id = OptionalString(doc, "id");
  if (id.empty()) return absl::DataLossError("POST /files answered without a file 'id'");
  return id;
}

absl::StatusOr<BatchInfo> BatchApi::CreateBatch(const std::string& input_file_id) {
  HttpRequest request = Request("POST", "/batches");
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("input_file_id");
    WriteJsonString(w, input_file_id);
    w.Key("endpoint");
    WriteJsonString(w, GraderApiBatchUrl(options_.api));
    w.Key("completion_window");
    w.String("24h");
    w.EndObject();
  });
  HB_ASSIGN_OR_RETURN(HttpResponse response,
                      Call(std::move(request), "POST /batches", options_.retry.max_attempts));
  return ParseBatchInfo(response.body);
}

absl::StatusOr<BatchInfo> BatchApi::GetBatch(const std::string& batch_id) {
  HB_ASSIGN_OR_RETURN(HttpResponse response,
                      Call(Request("GET", absl::StrCat("/batches/", batch_id)), "GET /batches/{id}",
                           options_.retry.max_attempts));
  return ParseBatchInfo(response.body);
}

absl::StatusOr<BatchInfo> BatchApi::CancelBatch(const std::string& batch_id) {
  HB_ASSIGN_OR_RETURN(HttpResponse response,
                      Call(Request("POST", absl::StrCat("/batches/", batch_id, "/cancel")),
                           "POST /batches/{id}/cancel", options_.retry.max_attempts));
  return ParseBatchInfo(response.body);
}

absl::StatusOr<std::vector<BatchInfo>> BatchApi::ListBatches() {
  HB_ASSIGN_OR_RETURN(HttpResponse response, Call(Request("GET", "/batches?limit=100"),
                                                  "GET /batches", options_.retry.max_attempts));
  rapidjson::Document doc;
  const rapidjson::Value* data = nullptr;
  if (ParseJson(response.body, doc).ok() && doc.IsObject()) data = FindJsonMember(doc, "data");
  if (data == nullptr || !data->IsArray()) {
    return absl::DataLossError("GET /batches answered without a 'data' array");
  }
  std::vector<BatchInfo> batches;
  for (const rapidjson::Value& v : data->GetArray()) {
    HB_ASSIGN_OR_RETURN(BatchInfo info, BatchFromJson(v));
    batches.push_back(std::move(info));
  }
  return batches;
}

absl::StatusOr<std::string> BatchApi::FileContent(const std::string& file_id) {
  HttpRequest request = Request("GET", absl::StrCat("/files/", file_id, "/content"));
  request.max_response_body_bytes = options_.max_download_bytes;
  HB_ASSIGN_OR_RETURN(HttpResponse response, Call(std::move(request), "GET /files/{id}/content",
                                                  options_.retry.max_attempts));
  return std::move(response.body);
}

}  // namespace hb
