// The OpenAI Batch API of hb-llm-sim, in memory: files (upload, content), batches (create,
// retrieve, list, cancel). A batch completes `completion_delay` after it was created (checked
// on each request, by the injected clock: no timers); then each of its input lines is answered
// through the simulator's own chat handling (so verdicts, faults and usage are exactly those of
// an online request with the same body) and written to the batch's output file, or, for the
// injected batch faults, to its error file. Thread-safe.
//
// Routes (relative to the server root; the /v1 prefix is required):
//   POST /v1/files                multipart/form-data with `purpose` (must be "batch") and `file`
//   GET  /v1/files/{id}/content   the file's bytes
//   POST /v1/batches              {"input_file_id", "endpoint", "completion_window"}; the
//                                 endpoint is /v1/chat/completions or /v1/responses, and each
//                                 line's "url" must be it (else the line goes to the error file)
//   GET  /v1/batches              {"object": "list", "data": [batches, newest first]}
//   GET  /v1/batches/{id}
//   POST /v1/batches/{id}/cancel  an unfinished batch becomes "cancelled" at once (no output)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/clock.h"

namespace hb::sim {

struct SimHttpRequest;
struct SimAction;
class SimMetrics;

struct BatchOptions {
  // From creation to completion.
  absl::Duration completion_delay = absl::Seconds(1);
  // Per input line, drawn independently (seed, line sequence number): the line goes to the
  // error file as failed (code "server_error") or expired (code "batch_expired"; the batch's
  // status is then "expired").
  double fault_failed = 0;
  double fault_expired = 0;
  uint64_t seed = 0;
};

class BatchService {
 public:
  // Answers one chat-completions or Responses request (the simulator's online handling; the
  // request's path is the batch endpoint).
  using ChatHandler = std::function<SimAction(const SimHttpRequest&)>;

  // `clock` and `metrics` are not owned and must outlive the service.
  BatchService(BatchOptions options, const Clock* clock, SimMetrics* metrics, ChatHandler chat);

  // Whether `path` is a Batch API route.
  static bool Serves(absl::string_view path);

  // Handles a request for a route Serves() accepts (authentication is the caller's).
  SimAction Handle(const SimHttpRequest& request);

 private:
  struct File {
    std::string id;
    std::string filename;
    std::string purpose;
    std::string content;
    absl::Time created;
  };
  struct Batch {
    std::string id;
    std::string input_file_id;
    std::string endpoint;
    std::string completion_window;
    std::string status;  // validating, in_progress, completed, expired, cancelled, failed
    std::string output_file_id;
    std::string error_file_id;
    std::string authorization;  // replayed on each line's chat request
    std::vector<std::pair<std::string, std::string>> headers;  // replayed likewise
    absl::Time created;
    absl::Time finished;
    int64_t total = 0;
    int64_t completed = 0;
    int64_t failed = 0;
    std::string error;  // why the batch failed (status "failed")
  };

  SimAction Upload(const SimHttpRequest& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  SimAction Create(const SimHttpRequest& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Completes `batch` when it is due.
  void Advance(Batch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Complete(Batch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string BatchJson(const Batch& batch) const;
  std::string NewFile(std::string filename, std::string content) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const BatchOptions options_;
  const Clock* const clock_;
  SimMetrics* const metrics_;
  const ChatHandler chat_;

  absl::Mutex mu_;
  std::map<std::string, File> files_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Batch> batches_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_line_ ABSL_GUARDED_BY(mu_) = 0;
};

// The content of the part named `name` of a multipart/form-data `body` whose Content-Type is
// `content_type` (with its boundary), and that part's filename (empty when none). false when
// the body has no such part. Exposed for tests.
bool MultipartField(absl::string_view content_type, absl::string_view body, absl::string_view name,
                    std::string* value, std::string* filename);

}  // namespace hb::sim
