// hb-env with overlapping splits (issue 31 point 7): HealthBench's Hard and Consensus are subsets
// of the main set by prompt_id, Consensus with its own rubric for the same conversation. A task
// is (split, prompt_id): the official files load together, every way of naming a task resolves
// it within its split, a bare id that several splits hold is refused listing them, and a reply
// graded against one split's rubric is never answered (from memory or from --cache-db) for
// another split's rubric. Real grading (Grader on a FakeLlmClient, in process), real records.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "environment/grpc/env_service.h"
#include "environment/healthbench_environment.h"
#include "environment/result_cache.h"
#include "environment/sqlite_result_store.h"
#include "gmock/gmock.h"
#include "grader_client/in_process_grader_client.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/fake_llm_client.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb::env {
namespace {

using ::hb::testing::ChatReply;
using ::hb::testing::FakeClock;
using ::hb::testing::FakeLlmClient;
using ::hb::testing::FakeScheduler;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<ChatResult> AlwaysMet(const ChatRequest&) {
  return ChatReply(R"({"explanation": "yes", "criteria_met": true})");
}

// The first record of the main file with only its first `keep` rubric items, written to a file of
// its own: the same prompt_id and conversation as in main, another rubric (as Consensus has).
std::string WriteShortRubricCopy(size_t keep) {
  std::ifstream in(testing::SharedDataFile(testing::kMainHead30));
  std::string line;
  std::getline(in, line);
  rapidjson::Document doc;
  doc.Parse(line.c_str());
  EXPECT_FALSE(doc.HasParseError());
  rapidjson::Value& rubrics = doc["rubrics"];
  while (rubrics.Size() > keep) rubrics.PopBack();
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  const std::string path = testing::MakeTempDir() + "/consensus_like.jsonl";
  std::ofstream(path) << buffer.GetString() << "\n";
  return path;
}

class OverlappingSplitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tmpl = GraderTemplate::Load(testing::ReferenceTemplatePath(), false);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    grader_ = std::make_unique<Grader>(
        llm_, scheduler_, Clock::Real(), [] { return 0.0; }, *tmpl, GraderConfig{});
    client_ = std::make_unique<InProcessGraderClient>(*grader_, Clock::Real());
    llm_.SetResponder(AlwaysMet);
    main_ = *LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  }
  void TearDown() override { env_.reset(); }

  // main (the real head of the main file) and "consensus" (its first record, 2 rubric items).
  void Start(ResultStore* store = nullptr) {
    env_.reset();
    auto splits = LoadSplits({{"main", testing::SharedDataFile(testing::kMainHead30)},
                              {"consensus", WriteShortRubricCopy(2)}});
    ASSERT_TRUE(splits.ok()) << splits.status();
    HealthBenchEnvironmentOptions options;
    options.grader_fingerprint = "fp";
    options.cache_store = store;
    env_ = std::make_unique<HealthBenchEnvironment>(*std::move(splits), *client_, Clock::Real(),
                                                    scheduler_, options);
    ASSERT_TRUE(env_->LoadCache().ok());
  }

  absl::StatusOr<SubmitResult> Submit(const TaskRef& ref, const std::string& reply) {
    absl::Notification done;
    absl::StatusOr<SubmitResult> out;
    env_->Submit(ref, reply, absl::InfiniteFuture(), [&](absl::StatusOr<SubmitResult> result) {
      out = std::move(result);
      done.Notify();
    });
    done.WaitForNotification();
    return out;
  }

  const std::string& Id() const { return main_.examples[0].prompt_id; }

  FakeClock scheduler_clock_;
  FakeScheduler scheduler_{scheduler_clock_};
  FakeLlmClient llm_;
  std::unique_ptr<Grader> grader_;
  std::unique_ptr<InProcessGraderClient> client_;
  Dataset main_;
  std::unique_ptr<HealthBenchEnvironment> env_;
};

TEST(LoadSplitsTest, TheOfficialMainHardAndConsensusFilesLoadTogether) {
  // The Hard subset's records are also in the main file (same prompt_id, same record).
  auto splits = LoadSplits({{"main", testing::SharedDataFile(testing::kMainHead30)},
                            {"hard", testing::SharedDataFile(testing::kHardHead4)},
                            {"consensus", testing::SharedDataFile(testing::kConsensus104)}});
  ASSERT_TRUE(splits.ok()) << splits.status();
  ASSERT_EQ(splits->size(), 3u);
  EXPECT_EQ((*splits)[0].dataset.examples.size(), 30u);
  EXPECT_EQ((*splits)[1].dataset.examples.size(), 4u);
  EXPECT_EQ((*splits)[2].dataset.examples.size(), 104u);
}

TEST_F(OverlappingSplitsTest, AnIdInMainAndHardResolvesWithinTheNamedSplitOnly) {
  auto splits = LoadSplits({{"main", testing::SharedDataFile(testing::kMainHead30)},
                            {"hard", testing::SharedDataFile(testing::kHardHead4)},
                            {"consensus", testing::SharedDataFile(testing::kConsensus104)}});
  ASSERT_TRUE(splits.ok()) << splits.status();
  const std::string hard_id = (*splits)[1].dataset.examples[0].prompt_id;
  const std::string consensus_id = (*splits)[2].dataset.examples[0].prompt_id;
  // The two files hold the same record for a Hard id: one task content, one cache identity.
  size_t in_main = 0;
  while ((*splits)[0].dataset.examples[in_main].prompt_id != hard_id) ++in_main;
  EXPECT_EQ(TaskCacheId((*splits)[0].dataset.examples[in_main]),
            TaskCacheId((*splits)[1].dataset.examples[0]));
  env_ = std::make_unique<HealthBenchEnvironment>(*std::move(splits), *client_, Clock::Real(),
                                                  scheduler_, HealthBenchEnvironmentOptions{});

  auto in_hard = env_->GetTask(TaskRef::InSplit("hard", hard_id));
  ASSERT_TRUE(in_hard.ok()) << in_hard.status();
  EXPECT_EQ(in_hard->task.split, "hard");
  EXPECT_EQ(in_hard->task.index, 0);
  auto in_main_split = env_->GetTask(TaskRef::InSplit("main", hard_id));
  ASSERT_TRUE(in_main_split.ok()) << in_main_split.status();
  EXPECT_EQ(in_main_split->task.split, "main");
  EXPECT_EQ(in_main_split->task.index, static_cast<int64_t>(in_main));
  // "SPLIT/ID" is the one-string form.
  auto qualified = env_->GetTask(TaskRef::ById("hard/" + hard_id));
  ASSERT_TRUE(qualified.ok()) << qualified.status();
  EXPECT_EQ(qualified->task.split, "hard");
  // A bare id that two splits hold is refused, naming both and how to choose.
  EXPECT_THAT(env_->GetTask(TaskRef::ById(hard_id)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("task id '", hard_id,
                                              "' is in 2 splits ('main', 'hard'), each graded "
                                              "against its own rubric: name the split"))));
  // An id in one split only needs no split.
  auto only = env_->GetTask(TaskRef::ById(consensus_id));
  ASSERT_TRUE(only.ok()) << only.status();
  EXPECT_EQ(only->task.split, "consensus");
  EXPECT_THAT(env_->GetTask(TaskRef::InSplit("hard", consensus_id)),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat("task id '", consensus_id,
                                              "' is not in split 'hard' (it is in 'consensus')"))));
  EXPECT_THAT(env_->GetTask(TaskRef::InSplit("nope", hard_id)),
              StatusIs(absl::StatusCode::kNotFound, "unknown split 'nope'"));
  EXPECT_THAT(env_->GetTask(TaskRef{hard_id, "hard", 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not by task_id and index")));
  // Nothing was graded to answer any of these.
  EXPECT_TRUE(llm_.requests().empty());
}

TEST_F(OverlappingSplitsTest, TheSameIdInTwoSplitsIsGradedAgainstEachSplitsOwnRubric) {
  Start();
  const size_t main_items = main_.examples[0].rubrics.size();
  ASSERT_GT(main_items, 2u);
  auto in_main = Submit(TaskRef::InSplit("main", Id()), "a reply");
  ASSERT_TRUE(in_main.ok()) << in_main.status();
  EXPECT_EQ(in_main->split, "main");
  EXPECT_EQ(in_main->items.size(), main_items);
  EXPECT_EQ(llm_.requests().size(), main_items);

  // The same reply for the same prompt_id in "consensus": graded anew against its 2 items.
  auto in_consensus = Submit(TaskRef::InSplit("consensus", Id()), "a reply");
  ASSERT_TRUE(in_consensus.ok()) << in_consensus.status();
  EXPECT_FALSE(in_consensus->from_cache);
  EXPECT_EQ(in_consensus->split, "consensus");
  EXPECT_EQ(in_consensus->task_id, Id());
  ASSERT_EQ(in_consensus->items.size(), 2u);
  EXPECT_EQ(in_consensus->items[1].criterion, main_.examples[0].rubrics[1].criterion);
  EXPECT_EQ(llm_.requests().size(), main_items + 2);

  // Each split's resubmission is answered from its own cached result.
  auto again_main = Submit(TaskRef::ById("main/" + Id()), "a reply");
  ASSERT_TRUE(again_main.ok()) << again_main.status();
  EXPECT_TRUE(again_main->from_cache);
  EXPECT_EQ(again_main->split, "main");
  EXPECT_EQ(again_main->items.size(), main_items);
  auto again_consensus = Submit(TaskRef::InSplit("consensus", Id()), "a reply");
  ASSERT_TRUE(again_consensus.ok()) << again_consensus.status();
  EXPECT_TRUE(again_consensus->from_cache);
  EXPECT_EQ(again_consensus->items.size(), 2u);
  EXPECT_EQ(llm_.requests().size(), main_items + 2);

  // A bare id is ambiguous here: refused before any judge call.
  EXPECT_THAT(Submit(TaskRef::ById(Id()), "a reply"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("('main', 'consensus'), each graded against its own rubric")));
  EXPECT_EQ(llm_.requests().size(), main_items + 2);
}

TEST_F(OverlappingSplitsTest, APersistedResultOfOneSplitsRubricNeverAnswersForAnother) {
  const std::string path = testing::MakeTempDir() + "/cache.sqlite";
  const size_t main_items = main_.examples[0].rubrics.size();
  {
    auto store = SqliteResultStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    Start(store->get());
    ASSERT_TRUE(Submit(TaskRef::InSplit("main", Id()), "a reply").ok());
    env_.reset();
  }
  ASSERT_EQ(llm_.requests().size(), main_items);
  auto store = SqliteResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  Start(store->get());
  auto in_consensus = Submit(TaskRef::InSplit("consensus", Id()), "a reply");
  ASSERT_TRUE(in_consensus.ok()) << in_consensus.status();
  EXPECT_FALSE(in_consensus->from_cache);
  EXPECT_EQ(in_consensus->items.size(), 2u);
  EXPECT_EQ(llm_.requests().size(), main_items + 2);
  auto in_main = Submit(TaskRef::InSplit("main", Id()), "a reply");
  ASSERT_TRUE(in_main.ok()) << in_main.status();
  EXPECT_TRUE(in_main->from_cache);
  EXPECT_EQ(in_main->split, "main");
  EXPECT_EQ(in_main->items.size(), main_items);
}

TEST(TaskCacheIdTest, TheRubricAndTheConversationChangeTheId) {
  auto dataset = LoadDataset(testing::SharedDataFile(testing::kMainHead30), {});
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  const Example& example = dataset->examples[0];
  const std::string id = TaskCacheId(example);
  EXPECT_EQ(id.rfind(example.prompt_id + "#", 0), 0u);
  Example other = example;
  other.rubrics.pop_back();
  EXPECT_NE(TaskCacheId(other), id);
  other = example;
  other.rubrics[0].points_text = "5.0";
  EXPECT_NE(TaskCacheId(other), id);
  other = example;
  other.prompt[0].content += " ";
  EXPECT_NE(TaskCacheId(other), id);
  EXPECT_EQ(TaskCacheId(example), id);
}

// gRPC's TaskRef: task_id + split is the in-split form (before overlapping splits it was
// refused); split + index and a bare task_id keep their meaning.
TEST(TaskRefFromProtoTest, EveryFormKeepsItsMeaning) {
  env_v1::TaskRef proto;
  proto.set_task_id("p");
  EXPECT_EQ(TaskRefFromProto(proto), TaskRef::ById("p"));
  proto.set_index(3);  // ignored without a split, as before
  EXPECT_EQ(TaskRefFromProto(proto), TaskRef::ById("p"));
  proto.set_split("hard");
  proto.set_index(0);
  EXPECT_EQ(TaskRefFromProto(proto), TaskRef::InSplit("hard", "p"));
  proto.set_index(2);
  EXPECT_EQ(TaskRefFromProto(proto), (TaskRef{"p", "hard", 2}));
  proto.clear_task_id();
  EXPECT_EQ(TaskRefFromProto(proto), TaskRef::ByIndex("hard", 2));
  proto.set_index(0);
  EXPECT_EQ(TaskRefFromProto(proto), TaskRef::ByIndex("hard", 0));
}

}  // namespace
}  // namespace hb::env
