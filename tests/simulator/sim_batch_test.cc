// The simulator's Batch API (simulator/sim_batch.h) driven directly, with a fake clock: a batch
// completes at its delay, its lines are answered as online chat requests, injected faults go to
// the error file, cancel stops it, and the counters follow.
#include "simulator/sim_batch.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "simulator/sim_core.h"
#include "tests/testing/fake_clock.h"

namespace hb::sim {
namespace {

using ::hb::testing::FakeClock;
using ::testing::HasSubstr;

constexpr char kBoundary[] = "XyZ";

std::string Line(const std::string& custom_id, const std::string& user) {
  return absl::StrCat(
      R"({"custom_id":")", custom_id,
      R"(","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":")",
      user, R"("}],"temperature":0.5,"max_tokens":64}})", "\n");
}

std::string Multipart(const std::string& content) {
  return absl::StrCat("--", kBoundary,
                      "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--",
                      kBoundary,
                      "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
                      "Content-Type: application/jsonl\r\n\r\n",
                      content, "\r\n--", kBoundary, "--\r\n");
}

class SimBatchTest : public ::testing::Test {
 protected:
  SimAction Call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& content_type = "") {
    SimHttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.content_type = content_type;
    return sim_->Handle(request);
  }

  rapidjson::Document Json(const SimAction& action) {
    rapidjson::Document doc;
    doc.Parse(action.body.c_str());
    EXPECT_FALSE(doc.HasParseError()) << action.body;
    return doc;
  }

  // Uploads `content` and creates a batch of it; returns the batch id.
  std::string Submit(const std::string& content,
                     const std::string& endpoint = "/v1/chat/completions") {
    const SimAction upload = Call("POST", "/v1/files", Multipart(content),
                                  absl::StrCat("multipart/form-data; boundary=", kBoundary));
    EXPECT_EQ(upload.status, 200) << upload.body;
    const std::string file_id = Json(upload)["id"].GetString();
    const SimAction created =
        Call("POST", "/v1/batches",
             absl::StrCat(R"({"input_file_id":")", file_id, R"(","endpoint":")", endpoint,
                          R"(","completion_window":"24h"})"));
    EXPECT_EQ(created.status, 200) << created.body;
    return Json(created)["id"].GetString();
  }

  void Start(BatchOptions batch) {
    SimulatorOptions options;
    options.batch = batch;
    sim_ = std::make_unique<Simulator>(options, &clock_);
  }

  FakeClock clock_;
  std::unique_ptr<Simulator> sim_;
};

TEST_F(SimBatchTest, CompletesAtItsDelayWithOneAnswerPerLine) {
  BatchOptions batch;
  batch.completion_delay = absl::Seconds(10);
  Start(batch);
  const std::string id = Submit(Line("a", "first") + Line("b", "second"));
  EXPECT_EQ(std::string(Json(Call("GET", "/v1/batches/" + id))["status"].GetString()),
            "in_progress");
  clock_.Advance(absl::Seconds(10));
  rapidjson::Document done = Json(Call("GET", "/v1/batches/" + id));
  EXPECT_EQ(std::string(done["status"].GetString()), "completed");
  EXPECT_EQ(done["request_counts"]["completed"].GetInt(), 2);
  EXPECT_TRUE(done["error_file_id"].IsNull());
  const SimAction output =
      Call("GET", absl::StrCat("/v1/files/", done["output_file_id"].GetString(), "/content"));
  std::vector<std::string> lines = absl::StrSplit(output.body, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u);
  rapidjson::Document first;
  first.Parse(lines[0].c_str());
  EXPECT_EQ(std::string(first["custom_id"].GetString()), "a");
  EXPECT_EQ(first["response"]["status_code"].GetInt(), 200);
  EXPECT_EQ(std::string(first["response"]["body"]["object"].GetString()), "chat.completion");
  const std::string metrics = sim_->RenderMetrics();
  EXPECT_THAT(metrics, HasSubstr("hb_sim_batches_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_batch_requests_total 2\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_batch_requests_completed_total 2\n"));
  EXPECT_THAT(metrics, HasSubstr("hb_sim_requests_total 2\n"));  // answered as chat requests
}

TEST_F(SimBatchTest, ResponsesEndpointAnswersResponsesLinesAndRefusesOtherUrls) {
  Start(BatchOptions{});
  const std::string responses_line = absl::StrCat(
      R"({"custom_id":"r","method":"POST","url":"/v1/responses","body":{"model":"gpt-5.4",)",
      R"("input":[{"role":"user","content":"q"}],"reasoning":{"effort":"low"}}})", "\n");
  const std::string id = Submit(responses_line + Line("c", "chat line"), "/v1/responses");
  clock_.Advance(absl::Seconds(1));
  rapidjson::Document done = Json(Call("GET", "/v1/batches/" + id));
  EXPECT_EQ(std::string(done["endpoint"].GetString()), "/v1/responses");
  EXPECT_EQ(done["request_counts"]["completed"].GetInt(), 1);
  EXPECT_EQ(done["request_counts"]["failed"].GetInt(), 1);
  const SimAction output =
      Call("GET", absl::StrCat("/v1/files/", done["output_file_id"].GetString(), "/content"));
  rapidjson::Document first;
  first.Parse(output.body.c_str());
  EXPECT_EQ(std::string(first["response"]["body"]["object"].GetString()), "response");
  EXPECT_EQ(
      first["response"]["body"]["usage"]["output_tokens_details"]["reasoning_tokens"].GetInt(),
      192);
  const SimAction errors =
      Call("GET", absl::StrCat("/v1/files/", done["error_file_id"].GetString(), "/content"));
  EXPECT_THAT(errors.body, HasSubstr("line url '/v1/chat/completions' is not the batch endpoint "
                                     "'/v1/responses'"));
}

TEST_F(SimBatchTest, ExpiredAndFailedLinesGoToTheErrorFile) {
  BatchOptions batch;
  batch.completion_delay = absl::ZeroDuration();
  batch.fault_expired = 1;
  Start(batch);
  const std::string id = Submit(Line("a", "x"));
  rapidjson::Document done = Json(Call("GET", "/v1/batches/" + id));
  EXPECT_EQ(std::string(done["status"].GetString()), "expired");
  EXPECT_TRUE(done["output_file_id"].IsNull());
  const SimAction errors =
      Call("GET", absl::StrCat("/v1/files/", done["error_file_id"].GetString(), "/content"));
  EXPECT_THAT(errors.body,
              HasSubstr(R"("custom_id":"a","response":null,"error":{"code":"batch_expired")"));
}

TEST_F(SimBatchTest, CancelStopsAnUnfinishedBatchAndListShowsIt) {
  BatchOptions batch;
  batch.completion_delay = absl::Hours(1);
  Start(batch);
  const std::string id = Submit(Line("a", "x"));
  EXPECT_EQ(std::string(Json(Call("POST", "/v1/batches/" + id + "/cancel"))["status"].GetString()),
            "cancelled");
  clock_.Advance(absl::Hours(2));
  EXPECT_EQ(std::string(Json(Call("GET", "/v1/batches/" + id))["status"].GetString()), "cancelled");
  rapidjson::Document list = Json(Call("GET", "/v1/batches"));
  ASSERT_EQ(list["data"].Size(), 1u);
  EXPECT_EQ(std::string(list["data"][0]["id"].GetString()), id);
  EXPECT_THAT(sim_->RenderMetrics(), HasSubstr("hb_sim_batches_cancelled_total 1\n"));
}

TEST_F(SimBatchTest, BadRequestsAreRefused) {
  Start(BatchOptions{});
  EXPECT_EQ(Call("POST", "/v1/files", "not multipart", "text/plain").status, 400);
  EXPECT_EQ(
      Call(
          "POST", "/v1/batches",
          R"({"input_file_id":"nope","endpoint":"/v1/chat/completions","completion_window":"24h"})")
          .status,
      404);
  EXPECT_EQ(Call("GET", "/v1/batches/nope").status, 404);
  EXPECT_EQ(Call("GET", "/v1/files/nope/content").status, 404);
}

}  // namespace
}  // namespace hb::sim
