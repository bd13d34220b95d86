// SampleToFile on a FakeLlmClient: the probe (the first task's request, sent once) goes out with
// the others, within --max-in-flight, and a probe the endpoint refuses is the job's error.
#include "orchestrator/commands/sample_command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/fake_scheduler.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::HttpFailure;
using ::hb::testing::IsOk;
using ::hb::testing::MakeTempDir;
using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class SampleToFileTest : public ::testing::Test {
 protected:
  SampleOptions Options(int max_in_flight) {
    SampleOptions options;
    options.dataset = hb::testing::SharedDataFile(hb::testing::kMainHead30);
    options.examples = 5;
    options.out = hb::testing::MakeTempDir() + "/responses.jsonl";
    options.policy_base_url = "http://policy/v1";
    options.request.model = "m";
    options.max_in_flight = max_in_flight;
    options.progress_interval = absl::Hours(1);
    return options;
  }
  // Runs SampleToFile on its own thread (the fake answers calls from the test's thread).
  void Start(const SampleOptions& options) {
    thread_ =
        std::thread([this, options] { result_ = SampleToFile(options, llm_, scheduler_, log_); });
  }
  absl::StatusOr<SampleSummary> Finish() {
    thread_.join();
    return result_;
  }
  void TearDown() override {
    if (thread_.joinable()) thread_.join();
    std::fclose(log_);
  }

  FakeClock clock_;
  FakeScheduler scheduler_{clock_};
  FakeLlmClient llm_;
  std::FILE* log_ = std::tmpfile();
  std::thread thread_;
  absl::StatusOr<SampleSummary> result_ = absl::UnknownError("not run");
};

// Before any answer, --max-in-flight requests are out: the probe does not hold the others back
// for a round trip, and it counts against the same bound.
TEST_F(SampleToFileTest, TheProbeGoesOutWithTheOthersWithinMaxInFlight) {
  Start(Options(3));
  ASSERT_TRUE(llm_.WaitForPending(3, absl::Seconds(30)));
  EXPECT_EQ(llm_.pending(), 3u);
  for (int answered = 0; answered < 5; ++answered) {
    ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(30)));
    ASSERT_TRUE(llm_.CompleteNext(ChatReply("a reply")));
  }
  HB_ASSERT_OK_AND_ASSIGN(SampleSummary summary, Finish());
  EXPECT_EQ(summary.replies, 5);
  EXPECT_EQ(summary.failed, 0);
  EXPECT_EQ(llm_.requests().size(), 5u);
}

// With one slot the probe is alone: the sampler waits for its answer.
TEST_F(SampleToFileTest, WithOneSlotTheProbeGoesFirstAndAlone) {
  Start(Options(1));
  for (int answered = 0; answered < 5; ++answered) {
    ASSERT_TRUE(llm_.WaitForPending(1, absl::Seconds(30)));
    EXPECT_EQ(llm_.pending(), 1u);
    ASSERT_TRUE(llm_.CompleteNext(ChatReply("a reply")));
  }
  HB_ASSERT_OK_AND_ASSIGN(SampleSummary summary, Finish());
  EXPECT_EQ(summary.replies, 5);
}

// A refused key on the probe (the oldest call) stops the job with the reason and the fix, once
// the calls already out have ended (refused as well, or cancelled by the stop).
TEST_F(SampleToFileTest, ARefusedProbeIsTheErrorAndStopsTheSampler) {
  Start(Options(3));
  ASSERT_TRUE(llm_.WaitForPending(3, absl::Seconds(30)));
  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return HttpFailure(401, std::nullopt, "bad key");
  });
  // The probe first (the oldest call); the others are refused too, or cancelled by the stop.
  ASSERT_TRUE(llm_.CompleteNext(HttpFailure(401, std::nullopt, "bad key")));
  while (llm_.CompleteNext(HttpFailure(401, std::nullopt, "bad key"))) {
  }
  EXPECT_THAT(Finish(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("probe request to http://policy/v1 failed")));
  EXPECT_THAT(result_.status().message(), HasSubstr("POLICY_API_KEY"));
}

constexpr char kVerdict[] = R"({"explanation": "The response says so.", "criteria_met": true})";

// What the fix says whatever the reply shown.
constexpr char kGraderRouteFix[] =
    " \u2014 --policy-base-url points at a grader route; give the policy's own endpoint "
    "(hb-llm-sim serves policies at http://HOST:PORT/policy/v1, its grader at /v1)";

// A grader route answers every task with a verdict: the job stops with the reason and the fix,
// and nothing is journaled, whether the verdict is the probe's reply or (the probe having met a
// transient failure) another task's. The same command on the right endpoint starts from zero.
TEST_F(SampleToFileTest, RepliesThatAreGraderVerdictsStopTheJobAndAreNeverJournaled) {
  const SampleOptions options = Options(3);
  std::atomic<int> calls{0};
  llm_.SetResponder([&calls](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    if (calls++ == 0) return HttpFailure(503);  // the probe: transient, its task is retried
    return ChatReply(kVerdict);
  });
  Start(options);
  EXPECT_THAT(Finish(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                 absl::StrCat("a reply of http://policy/v1 (--policy-base-url, "
                                              "model m) is a grader verdict, not an answer to the "
                                              "task: a JSON object with a boolean "
                                              "\"criteria_met\": ",
                                              kVerdict, kGraderRouteFix)));

  llm_.SetResponder([](const ChatRequest&) -> absl::StatusOr<ChatResult> {
    return ChatReply("Drink water and rest.");
  });
  Start(options);
  HB_ASSERT_OK_AND_ASSIGN(SampleSummary summary, Finish());
  EXPECT_EQ(summary.from_journal, 0);
  EXPECT_EQ(summary.replies, 5);
}

TEST(CheckNotGraderVerdictTest, OnlyAReplyTheGraderWouldParseIsRefused) {
  SampleOptions options;
  options.policy_base_url = "http://127.0.0.1:8000/v1";
  options.endpoint_flag = "--policy tuned";
  options.request.model = "m";
  EXPECT_THAT(CheckNotGraderVerdict(options, "```json\n{\"criteria_met\": false}\n```"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("a reply of http://127.0.0.1:8000/v1 (--policy tuned, model m) "
                                 "is a grader verdict")));
  const std::string long_verdict =
      absl::StrCat(R"({"criteria_met": true, "explanation": ")", std::string(200, 'x'), "\"}");
  EXPECT_THAT(CheckNotGraderVerdict(options, long_verdict),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat(long_verdict.substr(0, 120), "... \u2014 "))));
  for (const char* answer :
       {"Drink water and rest.", R"({"answer": "rest"})", R"({"criteria_met": "yes"})",
        R"([{"criteria_met": true}])", "", "{"}) {
    EXPECT_THAT(CheckNotGraderVerdict(options, answer), IsOk()) << answer;
  }
}

class PrepareSampleOutputsTest : public ::testing::Test {
 protected:
  std::string dir_ = MakeTempDir();
};

// --out naming a directory is refused before anything is read or sent, with a file path to use.
TEST_F(PrepareSampleOutputsTest, ADirectoryIsRefusedWithAFilePathToUse) {
  for (const std::string& out : {dir_, dir_ + "/"}) {
    EXPECT_THAT(PrepareSampleOutputs(out),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat("--out ", out,
                                      " is a directory: sample writes one responses file (plus "
                                      ".journal, .failures.jsonl and .summary.json beside it); "
                                      "give a file path, e.g. --out ",
                                      dir_, "/responses.jsonl")));
  }
  HB_ASSERT_OK(MakeDirs(dir_ + "/r.jsonl.summary.json"));
  EXPECT_THAT(PrepareSampleOutputs(dir_ + "/r.jsonl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrCat("--out ", dir_, "/r.jsonl: ", dir_,
                                    "/r.jsonl.summary.json is a directory, where sample writes "
                                    "a file; move it away or choose another --out")));
}

TEST_F(PrepareSampleOutputsTest, AFolderThatCannotBeCreatedIsRefusedNamingIt) {
  HB_ASSERT_OK(WriteFileAtomically(dir_ + "/file", ""));
  EXPECT_THAT(
      PrepareSampleOutputs(dir_ + "/file/sub/r.jsonl"),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               absl::StrCat("--out ", dir_, "/file/sub/r.jsonl: cannot create directory ", dir_,
                            "/file/sub: Not a directory; give --out a path this user can "
                            "write (or create the folder with write permission first)")));
}

TEST_F(PrepareSampleOutputsTest, AnUnwritableFolderIsRefused) {
  // A folder under a regular file cannot be made by anyone, root included (ENOTDIR).
  const std::string file = dir_ + "/a-file";
  std::ofstream(file) << "x";
  const absl::Status status = PrepareSampleOutputs(file + "/sub/r.jsonl");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kFailedPrecondition,
                               AllOf(HasSubstr("--out " + file + "/sub/r.jsonl"),
                                     HasSubstr("Not a directory"), HasSubstr("give --out"))));
}

TEST_F(PrepareSampleOutputsTest, TheFolderIsCreated) {
  HB_EXPECT_OK(PrepareSampleOutputs(dir_ + "/a/b/r.jsonl"));
  struct stat st;
  ASSERT_EQ(::stat((dir_ + "/a/b").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

// SampleToFile checks its outputs before it reads the dataset or sends a request.
TEST_F(SampleToFileTest, ADirectoryAsOutFailsBeforeAnyRequest) {
  SampleOptions options = Options(3);
  options.out = MakeTempDir();
  EXPECT_THAT(SampleToFile(options, llm_, scheduler_, log_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(" is a directory: ")));
  EXPECT_THAT(llm_.requests(), IsEmpty());
}

}  // namespace
}  // namespace hb
