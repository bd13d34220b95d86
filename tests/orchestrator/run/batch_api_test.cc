// BatchApi (orchestrator/run/batch_api.h) against a scripted HttpClient: the requests it sends
// (methods, paths, multipart upload), how it classifies answers, and retries that wait on the
// scheduler (recorded, never slept).
#include "orchestrator/run/batch_api.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_http_client.h"
#include "tests/testing/inline_scheduler.h"
#include "tests/testing/scripted_http_client.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::InlineScheduler;
using ::hb::testing::MakeHttpResponse;
using ::hb::testing::ScriptedHttpClient;
using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kBatch[] =
    R"({"id":"batch_1","object":"batch","status":"in_progress","input_file_id":"file-1",)"
    R"("output_file_id":null,"error_file_id":null,)"
    R"("request_counts":{"total":3,"completed":1,"failed":0}})";

class BatchApiTest : public ::testing::Test {
 protected:
  BatchApiTest() : api_(http_, scheduler_, Options()) {}
  static BatchApiOptions Options() {
    BatchApiOptions options;
    options.base_url = "http://h/v1";
    options.api_key = "sk-secret";
    options.retry.max_attempts = 3;
    options.retry.base = absl::Seconds(1);
    options.retry.cap = absl::Seconds(30);
    return options;
  }
  ScriptedHttpClient http_;
  InlineScheduler scheduler_;
  BatchApi api_;
};

TEST_F(BatchApiTest, UploadsTheFileAsMultipartStreamedFromDisk) {
  http_.Then(MakeHttpResponse(200, R"({"id":"file-9","object":"file"})"));
  HB_ASSERT_OK_AND_ASSIGN(std::string id, api_.UploadFile("/run/batch/batch-000001.jsonl"));
  EXPECT_EQ(id, "file-9");
  ASSERT_EQ(http_.requests().size(), 1u);
  const HttpRequest& r = http_.requests()[0];
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.url, "http://h/v1/files");
  EXPECT_THAT(r.headers, ::testing::Contains(std::make_pair(std::string("Authorization"),
                                                            std::string("Bearer sk-secret"))));
  ASSERT_EQ(r.body_parts.size(), 3u);
  EXPECT_THAT(*r.body_parts[0].data, HasSubstr("name=\"purpose\"\r\n\r\nbatch\r\n"));
  EXPECT_THAT(*r.body_parts[0].data, HasSubstr("name=\"file\"; filename=\"batch-000001.jsonl\""));
  EXPECT_EQ(r.body_parts[1].file_path, "/run/batch/batch-000001.jsonl");
  EXPECT_THAT(*r.body_parts[2].data, HasSubstr("--\r\n"));
}

// An endpoint that takes smaller files than --batch-max-file-bytes says so with a 413.
TEST_F(BatchApiTest, AFileTooLargeIsFinalAndNamesTheFlagToLower) {
  http_.Then(MakeHttpResponse(413, "Request Entity Too Large"));
  EXPECT_THAT(api_.UploadFile("/run/batch/batch-000001.jsonl"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("HTTP 413: Request Entity Too Large; the endpoint takes smaller "
                                 "files: lower --batch-max-file-bytes")));
  EXPECT_TRUE(scheduler_.delays().empty());
}

TEST_F(BatchApiTest, CreatesPollsAndParsesBatches) {
  http_.Then(MakeHttpResponse(200, kBatch));
  http_.Then(MakeHttpResponse(200, kBatch));
  HB_ASSERT_OK_AND_ASSIGN(BatchInfo created, api_.CreateBatch("file-1"));
  EXPECT_EQ(
      http_.requests()[0].body,
      R"({"input_file_id":"file-1","endpoint":"/v1/chat/completions","completion_window":"24h"})");
  HB_ASSERT_OK_AND_ASSIGN(BatchInfo polled, api_.GetBatch("batch_1"));
  EXPECT_EQ(http_.requests()[1].method, "GET");
  EXPECT_EQ(http_.requests()[1].url, "http://h/v1/batches/batch_1");
  EXPECT_EQ(polled.status, "in_progress");
  EXPECT_FALSE(polled.Terminal());
  EXPECT_EQ(polled.total, 3);
  EXPECT_EQ(polled.completed, 1);
  EXPECT_EQ(polled.output_file_id, "");
  EXPECT_THAT(ParseBatchInfo("[]"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a JSON object")));
}

// 5xx and 429 are retried after the backoff ceiling (or a longer Retry-After), on the scheduler;
// the attempts are bounded.
TEST_F(BatchApiTest, TransientFailuresAreRetriedOnTheSchedulerWithinTheBudget) {
  http_.Then(MakeHttpResponse(503, R"({"error":{"message":"overloaded"}})"));
  http_.Then(MakeHttpResponse(429, "{}", {{"retry-after", "7"}}));
  http_.Then(MakeHttpResponse(200, kBatch));
  HB_ASSERT_OK(api_.GetBatch("batch_1").status());
  EXPECT_THAT(scheduler_.delays(), ElementsAre(absl::Seconds(1), absl::Seconds(7)));

  for (int i = 0; i < 3; ++i) http_.Then(MakeHttpResponse(500, "{}"));
  EXPECT_THAT(api_.GetBatch("batch_1"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("failed after 3 attempt(s)")));
}

TEST_F(BatchApiTest, ARefusedKeyIsFinalAndSaysHowToFixIt) {
  http_.Then(MakeHttpResponse(401, R"({"error":{"message":"Incorrect API key provided"}})"));
  const absl::Status status = api_.Probe();
  EXPECT_THAT(status,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("HTTP 401: Incorrect API key provided; check the API key")));
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("sk-secret")));
  EXPECT_TRUE(scheduler_.delays().empty());
  http_.Then(absl::UnavailableError("connection refused"));
  EXPECT_THAT(api_.Probe(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("cannot reach the Batch API at http://h/v1")));
}

TEST_F(BatchApiTest, DownloadsAllowLargeBodies) {
  http_.Then(MakeHttpResponse(200, "line\n"));
  HB_ASSERT_OK_AND_ASSIGN(std::string content, api_.FileContent("file-2"));
  EXPECT_EQ(content, "line\n");
  EXPECT_EQ(http_.requests()[0].url, "http://h/v1/files/file-2/content");
  EXPECT_EQ(http_.requests()[0].max_response_body_bytes, size_t{1} << 30);
}

}  // namespace
}  // namespace hb
