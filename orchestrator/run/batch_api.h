// BatchApi: the OpenAI Files and Batches endpoints `run --grader-mode batch` uses, over the one
// HttpClient (http/http_client.h). Each call blocks its caller until the exchange (and its
// retries) finished; the HTTP client runs on its own thread. Retries of a transient failure
// (transport error, 408, 409, 429, 5xx) wait on the injected Scheduler, never a sleep.
//
// Errors, by what the caller can do about them:
//   kFailedPrecondition  the endpoint refused the request for good (401/403: the key; other
//                        4xx): retrying cannot help, the run stops with exit 2. The message names
//                        the URL and the HTTP status and, for 401/403, how to fix the key.
//   kUnavailable         the transient failures outlasted `max_attempts`.
//   kDataLoss            a 200 answer that is not the JSON object expected.
// The API key is never part of a message.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/scheduler.h"
#include "common/healthbench/types.h"
#include "common/retry/retry_policy.h"
#include "http/http_client.h"

namespace hb {

struct BatchApiOptions {
  // The API root, e.g. https://api.openai.com/v1 (requests go to {base}/files, {base}/batches).
  std::string base_url = "https://api.openai.com/v1";
  // Bearer token; empty sends none. Never logged.
  std::string api_key;
  // Timeout of one exchange (uploads and downloads of hundreds of MB need minutes).
  absl::Duration request_timeout = absl::Minutes(10);
  // Attempts and backoff of each call (jitter-free BackoffCeiling; a Retry-After is honoured
  // up to retry.max_retry_after).
  RetryPolicy retry;
  // Largest file download kept in memory.
  size_t max_download_bytes = size_t{1} << 30;
  // The batches' endpoint: /v1/chat/completions or /v1/responses (GraderApiBatchUrl).
  GraderApi api = GraderApi::kChatCompletions;
  // Extra headers of every call (--llm-header, as the online grader sends them). Never logged.
  std::vector<std::pair<std::string, std::string>> headers;
};

// A batch as GET /batches/{id} describes it.
struct BatchInfo {
  std::string id;
  // validating, failed, in_progress, finalizing, completed, expired, cancelling, cancelled.
  std::string status;
  std::string input_file_id;
  std::string output_file_id;  // empty when none (yet)
  std::string error_file_id;   // empty when none (yet)
  int64_t total = 0;
  int64_t completed = 0;
  int64_t failed = 0;

  // completed, expired, cancelled or failed: nothing will change any more.
  bool Terminal() const;
};

class BatchApi {
 public:
  // `http` and `scheduler` are not owned and must outlive the BatchApi. Thread-compatible.
  BatchApi(HttpClient& http, Scheduler& scheduler, BatchApiOptions options);

  // One GET {base}/batches?limit=1, no retries: whether the endpoint answers and takes the key.
  // Errors: kInvalidArgument "cannot reach the Batch API at <url>: <why>; check --llm-base-url"
  // for a transport failure, kFailedPrecondition as above for a 4xx, kUnavailable for a 5xx.
  absl::Status Probe();
  // POST {base}/files, multipart/form-data (purpose=batch, file=<path>, streamed from disk).
  // Returns the file id.
  absl::StatusOr<std::string> UploadFile(const std::string& path);
  // POST {base}/batches {"input_file_id", "endpoint": "/v1/chat/completions" (or
  // "/v1/responses", by options.api), "completion_window": "24h"}.
  absl::StatusOr<BatchInfo> CreateBatch(const std::string& input_file_id);
  // GET {base}/batches/{id}.
  absl::StatusOr<BatchInfo> GetBatch(const std::string& batch_id);
  // POST {base}/batches/{id}/cancel.
  absl::StatusOr<BatchInfo> CancelBatch(const std::string& batch_id);
  // GET {base}/batches?limit=100: the most recent batches (to find one created for a file
  // whose batch id a killed run did not journal).
  absl::StatusOr<std::vector<BatchInfo>> ListBatches();
  // GET {base}/files/{id}/content.
  absl::StatusOr<std::string> FileContent(const std::string& file_id);

  const std::string& base_url() const { return options_.base_url; }
  // Some answer carried hb-llm-sim's header (kSimulatorHeader): the batch verdicts are simulated.
  bool simulated() const { return simulated_.load(std::memory_order_relaxed); }

 private:
  // One exchange, retried as above; `what` names it in errors ("POST /files").
  absl::StatusOr<HttpResponse> Call(HttpRequest request, const std::string& what, int max_attempts);
  absl::StatusOr<HttpResponse> Once(HttpRequest request);
  HttpRequest Request(const std::string& method, const std::string& path) const;

  HttpClient& http_;
  Scheduler& scheduler_;
  const BatchApiOptions options_;
  std::atomic<bool> simulated_{false};
};

// Parses a batch object (the body of GET /batches/{id}). kDataLoss when it is not one.
absl::StatusOr<BatchInfo> ParseBatchInfo(const std::string& body);

}  // namespace hb
