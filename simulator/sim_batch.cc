#include "simulator/sim_batch.h"

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/json_io.h"
#include "simulator/faults.h"
#include "simulator/sim_core.h"
#include "simulator/sim_metrics.h"

namespace hb::sim {
namespace {

constexpr uint64_t kFailedStream = 200;
constexpr uint64_t kExpiredStream = 201;

SimAction JsonReply(int status, std::string body) {
  SimAction action;
  action.status = status;
  action.headers.emplace_back("Content-Type", kJsonType);
  action.body = std::move(body);
  return action;
}

SimAction ErrorReply(int status, absl::string_view message, absl::string_view code = "") {
  return JsonReply(status, BuildErrorBody(message, "invalid_request_error", code));
}

bool Terminal(const std::string& status) {
  return status == "completed" || status == "expired" || status == "cancelled" ||
         status == "failed";
}

// One result line {"id", "custom_id", "response", "error"}: `response` writes the response
// object (or null), `error` the error object (or null).
template <typename Response, typename Error>
std::string ResultLine(const std::string& id, const std::string& custom_id, Response response,
                       Error error) {
  return WriteJson([&](JsonWriter& w) {
    w.StartObject();
    w.Key("id");
    WriteJsonString(w, id);
    w.Key("custom_id");
    WriteJsonString(w, custom_id);
    w.Key("response");
    response(w);
    w.Key("error");
    error(w);
    w.EndObject();
  });
}

void WriteNull(JsonWriter& w) { w.Null(); }

// An answered line: "response": {"status_code", "request_id", "body"}, "error": null. A body
// that is not JSON (never from the simulator) is sent as a string.
std::string OutputLine(const std::string& id, const std::string& custom_id, const SimAction& a) {
  return ResultLine(
      id, custom_id,
      [&](JsonWriter& w) {
        w.StartObject();
        w.Key("status_code");
        w.Int(a.status);
        w.Key("request_id");
        WriteJsonString(w, absl::StrCat("req_", id));
        w.Key("body");
        rapidjson::Document doc;
        if (ParseJson(a.body, doc).ok()) {
          WriteRawJson(w, a.body, doc.GetType());
        } else {
          WriteJsonString(w, a.body);
        }
        w.EndObject();
      },
      WriteNull);
}

// A line of the error file: "response": null, "error": {"code", "message"}.
std::string ErrorLine(const std::string& id, const std::string& custom_id, absl::string_view code,
                      absl::string_view message) {
  return ResultLine(id, custom_id, WriteNull, [&](JsonWriter& w) {
    w.StartObject();
    w.Key("code");
    WriteJsonString(w, code);
    w.Key("message");
    WriteJsonString(w, message);
    w.EndObject();
  });
}

void WriteTimeOrNull(JsonWriter& w, absl::Time t) {
  if (t == absl::InfinitePast()) {
    w.Null();
  } else {
    w.Int64(absl::ToUnixSeconds(t));
  }
}

}  // namespace

bool MultipartField(absl::string_view content_type, absl::string_view body, absl::string_view name,
                    std::string* value, std::string* filename) {
  const size_t at = content_type.find("boundary=");
  if (at == absl::string_view::npos) return false;
  absl::string_view boundary = content_type.substr(at + 9);
  boundary = boundary.substr(0, boundary.find(';'));
  boundary = absl::StripPrefix(absl::StripSuffix(boundary, "\""), "\"");
  const std::string delimiter = absl::StrCat("--", boundary);
  for (absl::string_view part : absl::StrSplit(body, delimiter)) {
    const size_t headers_end = part.find("\r\n\r\n");
    if (headers_end == absl::string_view::npos) continue;
    const absl::string_view headers = part.substr(0, headers_end);
    if (!absl::StrContains(headers, absl::StrCat("name=\"", name, "\""))) continue;
    absl::string_view content = part.substr(headers_end + 4);
    content = absl::StripSuffix(content, "\r\n");
    *value = std::string(content);
    filename->clear();
    const size_t f = headers.find("filename=\"");
    if (f != absl::string_view::npos) {
      const absl::string_view rest = headers.substr(f + 10);
      *filename = std::string(rest.substr(0, rest.find('"')));
    }
    return true;
  }
  return false;
}

BatchService::BatchService(BatchOptions options, const Clock* clock, SimMetrics* metrics,
                           ChatHandler chat)
    : options_(options), clock_(clock), metrics_(metrics), chat_(std::move(chat)) {}

bool BatchService::Serves(absl::string_view path) {
  return path == "/v1/files" || path == "/v1/batches" || absl::StartsWith(path, "/v1/files/") ||
         absl::StartsWith(path, "/v1/batches/");
}

SimAction BatchService::Handle(const SimHttpRequest& request) {
  absl::MutexLock lock(&mu_);
  const absl::string_view path = request.path;
  const bool get = request.method == "GET";
  const bool post = request.method == "POST";
  if (path == "/v1/files" && post) return Upload(request);
  if (path == "/v1/batches" && post) return Create(request);
  if (path == "/v1/batches" && get) {
    std::vector<std::string> items;
    for (auto& [id, batch] : batches_) {
      Advance(batch);
      items.push_back(BatchJson(batch));
    }
    std::string body = R"({"object":"list","data":[)";
    for (size_t i = items.size(); i-- > 0;) {
      absl::StrAppend(&body, items[i], i > 0 ? "," : "");
    }
    absl::StrAppend(&body, R"(],"has_more":false})");
    return JsonReply(200, std::move(body));
  }
  if (absl::StartsWith(path, "/v1/files/") && absl::EndsWith(path, "/content") && get) {
    const std::string id(path.substr(10, path.size() - 10 - 8));  // between /v1/files/ and /content
    auto it = files_.find(id);
    if (it == files_.end()) return ErrorReply(404, absl::StrCat("No such File object: ", id));
    SimAction action;
    action.headers.emplace_back("Content-Type", "application/octet-stream");
    action.body = it->second.content;
    return action;
  }
  if (absl::StartsWith(path, "/v1/batches/")) {
    absl::string_view rest = path.substr(12);
    const bool cancel = absl::ConsumeSuffix(&rest, "/cancel");
    auto it = batches_.find(std::string(rest));
    if (it == batches_.end()) return ErrorReply(404, absl::StrCat("No such Batch: ", rest));
    Batch& batch = it->second;
    Advance(batch);
    if (cancel && post) {
      if (!Terminal(batch.status)) {
        batch.status = "cancelled";
        batch.finished = clock_->Now();
        metrics_->BatchCancelled();
      }
      return JsonReply(200, BatchJson(batch));
    }
    if (!cancel && get) return JsonReply(200, BatchJson(batch));
  }
  return ErrorReply(405, absl::StrCat("method ", request.method, " not allowed on ", path));
}

SimAction BatchService::Upload(const SimHttpRequest& request) {
  std::string purpose, content, filename, ignored;
  if (!MultipartField(request.content_type, request.body, "purpose", &purpose, &ignored) ||
      !MultipartField(request.content_type, request.body, "file", &content, &filename)) {
    return ErrorReply(400, "expected multipart/form-data with fields 'purpose' and 'file'");
  }
  if (purpose != "batch") {
    return ErrorReply(400, absl::StrCat("purpose must be 'batch' here, got '", purpose, "'"));
  }
  const int64_t bytes = static_cast<int64_t>(content.size());
  const std::string id = NewFile(filename, std::move(content));
  files_[id].purpose = purpose;
  metrics_->BatchFileUploaded();
  return JsonReply(200, WriteJson([&](JsonWriter& w) {
                     w.StartObject();
                     w.Key("id");
                     WriteJsonString(w, id);
                     w.Key("object");
                     w.String("file");
                     w.Key("bytes");
                     w.Int64(bytes);
                     w.Key("created_at");
                     w.Int64(absl::ToUnixSeconds(clock_->Now()));
                     w.Key("filename");
                     WriteJsonString(w, filename);
                     w.Key("purpose");
                     w.String("batch");
                     w.EndObject();
                   }));
}

SimAction BatchService::Create(const SimHttpRequest& request) {
  rapidjson::Document doc;
  if (!ParseJson(request.body, doc).ok() || !doc.IsObject()) {
    return ErrorReply(400, "the body must be a JSON object");
  }
  absl::StatusOr<std::string> input = JsonStringMember(doc, "input_file_id");
  absl::StatusOr<std::string> endpoint = JsonStringMember(doc, "endpoint");
  absl::StatusOr<std::string> window = JsonStringMember(doc, "completion_window");
  for (const auto* field : {&input, &endpoint, &window}) {
    if (!field->ok()) return ErrorReply(400, field->status().message());
  }
  if (*endpoint != "/v1/chat/completions" && *endpoint != "/v1/responses") {
    return ErrorReply(400, absl::StrCat("unsupported endpoint '", *endpoint, "'"));
  }
  if (*window != "24h") return ErrorReply(400, "completion_window must be '24h'");
  if (files_.find(*input) == files_.end()) {
    return ErrorReply(404, absl::StrCat("No such File object: ", *input));
  }
  Batch batch;
  batch.id = absl::StrFormat("batch_sim%06d", ++next_id_);
  batch.input_file_id = *input;
  batch.endpoint = *endpoint;
  batch.completion_window = *window;
  batch.status = "validating";
  batch.authorization = std::string(request.authorization);
  for (const auto& [name, value] : request.headers) batch.headers.emplace_back(name, value);
  batch.created = clock_->Now();
  batch.finished = absl::InfinitePast();
  const std::string& content = files_[*input].content;
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipWhitespace())) {
    (void)line;
    ++batch.total;
  }
  metrics_->BatchCreated(batch.total);
  const std::string id = batch.id;
  batches_[id] = std::move(batch);
  return JsonReply(200, BatchJson(batches_[id]));
}

void BatchService::Advance(Batch& batch) {
  if (Terminal(batch.status)) return;
  if (clock_->Now() < batch.created + options_.completion_delay) {
    batch.status = "in_progress";
    return;
  }
  Complete(batch);
}

void BatchService::Complete(Batch& batch) {
  std::string output, errors;
  bool expired = false;
  for (absl::string_view line :
       absl::StrSplit(files_[batch.input_file_id].content, '\n', absl::SkipWhitespace())) {
    const uint64_t seq = next_line_++;
    const std::string line_id = absl::StrFormat("batch_req_sim%08d", seq);
    rapidjson::Document doc;
    absl::StatusOr<std::string> custom_id = std::string();
    absl::StatusOr<std::string> url = std::string();
    const rapidjson::Value* body = nullptr;
    if (ParseJson(line, doc).ok() && doc.IsObject()) {
      custom_id = JsonStringMember(doc, "custom_id");
      url = JsonStringMember(doc, "url");
      body = FindJsonMember(doc, "body");
    }
    if (!custom_id.ok() || custom_id->empty() || body == nullptr || !body->IsObject()) {
      absl::StrAppend(&errors,
                      ErrorLine(line_id, custom_id.ok() ? *custom_id : "", "invalid_request",
                                "line is not a batch request"),
                      "\n");
      ++batch.failed;
      continue;
    }
    // As OpenAI: every line's url must be the batch's endpoint.
    if (!url.ok() || *url != batch.endpoint) {
      absl::StrAppend(&errors,
                      ErrorLine(line_id, *custom_id, "invalid_request",
                                absl::StrCat("line url '", url.ok() ? *url : "",
                                             "' is not the batch endpoint '", batch.endpoint, "'")),
                      "\n");
      ++batch.failed;
      continue;
    }
    if (Uniform01(options_.seed, seq, kExpiredStream) < options_.fault_expired) {
      absl::StrAppend(&errors,
                      ErrorLine(line_id, *custom_id, "batch_expired",
                                "This request could not be executed before the completion window "
                                "expired (simulated fault)."),
                      "\n");
      expired = true;
      ++batch.failed;
      continue;
    }
    if (Uniform01(options_.seed, seq, kFailedStream) < options_.fault_failed) {
      absl::StrAppend(
          &errors,
          ErrorLine(line_id, *custom_id, "server_error", "The request failed (simulated fault)."),
          "\n");
      ++batch.failed;
      continue;
    }
    const std::string body_text = WriteJson([&](JsonWriter& w) { body->Accept(w); });
    SimHttpRequest chat;
    chat.method = "POST";
    chat.path = batch.endpoint;
    chat.authorization = batch.authorization;
    for (const auto& [name, value] : batch.headers) chat.headers.emplace_back(name, value);
    chat.body = body_text;
    const SimAction answer = chat_(chat);
    absl::StrAppend(&output, OutputLine(line_id, *custom_id, answer), "\n");
    ++batch.completed;
  }
  metrics_->BatchRequestsFinished(batch.completed, batch.failed);
  if (!output.empty()) batch.output_file_id = NewFile("batch_output.jsonl", std::move(output));
  if (!errors.empty()) batch.error_file_id = NewFile("batch_errors.jsonl", std::move(errors));
  batch.status = expired ? "expired" : "completed";
  batch.finished = clock_->Now();
}

std::string BatchService::NewFile(std::string filename, std::string content) {
  File file;
  file.id = absl::StrFormat("file-sim%06d", ++next_id_);
  file.filename = std::move(filename);
  file.purpose = "batch_output";
  file.content = std::move(content);
  file.created = clock_->Now();
  const std::string id = file.id;
  files_[id] = std::move(file);
  return id;
}

std::string BatchService::BatchJson(const Batch& b) const {
  return WriteJson([&](JsonWriter& w) {
    auto str_or_null = [&w](const std::string& s) {
      if (s.empty()) {
        w.Null();
      } else {
        WriteJsonString(w, s);
      }
    };
    w.StartObject();
    w.Key("id");
    WriteJsonString(w, b.id);
    w.Key("object");
    w.String("batch");
    w.Key("endpoint");
    WriteJsonString(w, b.endpoint);
    w.Key("errors");
    w.Null();
    w.Key("input_file_id");
    WriteJsonString(w, b.input_file_id);
    w.Key("completion_window");
    WriteJsonString(w, b.completion_window);
    w.Key("status");
    WriteJsonString(w, b.status);
    w.Key("output_file_id");
    str_or_null(b.output_file_id);
    w.Key("error_file_id");
    str_or_null(b.error_file_id);
    w.Key("created_at");
    w.Int64(absl::ToUnixSeconds(b.created));
    w.Key("completed_at");
    WriteTimeOrNull(w, b.status == "completed" ? b.finished : absl::InfinitePast());
    w.Key("expired_at");
    WriteTimeOrNull(w, b.status == "expired" ? b.finished : absl::InfinitePast());
    w.Key("cancelled_at");
    WriteTimeOrNull(w, b.status == "cancelled" ? b.finished : absl::InfinitePast());
    w.Key("request_counts");
    w.StartObject();
    w.Key("total");
    w.Int64(b.total);
    w.Key("completed");
    w.Int64(b.completed);
    w.Key("failed");
    w.Int64(b.failed);
    w.EndObject();
    w.Key("metadata");
    w.Null();
    w.EndObject();
  });
}

}  // namespace hb::sim
