// The sampling journal: round trip, a torn last line, refusal of another job's journal, and
// Replies read back from the file (the journal keeps no reply in memory).
#include "orchestrator/sample/sample_journal.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

SampledReply Reply(const std::string& id) {
  SampledReply reply;
  reply.prompt_id = id;
  reply.response = "text for " + id;
  reply.model = "m";
  reply.finish_reason = "length";
  reply.usage.prompt_tokens = 3;
  reply.usage.completion_tokens = 4;
  return reply;
}

// Appends through the ReplyJournal interface and waits for each commit.
absl::Status AppendAndWait(SampleJournal& journal, const std::vector<SampledReply>& replies) {
  std::vector<absl::Status> committed(replies.size(), absl::UnknownError("not committed"));
  absl::BlockingCounter pending(static_cast<int>(replies.size()));
  for (size_t i = 0; i < replies.size(); ++i) {
    journal.AppendReply(ReplyRecord{"", replies[i].prompt_id, FormatSampledReply(replies[i])},
                        [&committed, &pending, i](const absl::Status& status) {
                          committed[i] = status;
                          pending.DecrementCount();
                        });
  }
  pending.Wait();
  for (const absl::Status& status : committed) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

TEST(SampleJournalTest, ReplaysWhatWasAppendedAndDropsATornLastLine) {
  const std::string path = ::hb::testing::MakeTempDir() + "/out.jsonl.journal";
  const SampleJournalHeader header{"abc", -1, R"({"model":"m"})"};
  {
    absl::StatusOr<std::unique_ptr<SampleJournal>> journal = SampleJournal::Open(path, header);
    ASSERT_TRUE(journal.ok()) << journal.status();
    EXPECT_TRUE((*journal)->TakeReplayed().empty());
    ASSERT_TRUE(AppendAndWait(**journal, {Reply("a"), Reply("b")}).ok());
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(WriteFileAtomically(path, *text + R"({"prompt_id":"c","respo)").ok());
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SampleJournal> journal,
                          SampleJournal::Open(path, header));
  const std::vector<SampledReply> replayed = journal->TakeReplayed();
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_EQ(replayed[1].prompt_id, "b");
  EXPECT_EQ(replayed[1].finish_reason, "length");
  EXPECT_EQ(replayed[1].usage.completion_tokens, 4);
  ASSERT_TRUE(AppendAndWait(*journal, {Reply("c")}).ok());
  journal.reset();
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SampleJournal> again, SampleJournal::Open(path, header));
  EXPECT_EQ(again->TakeReplayed().size(), 3u);
}

std::vector<std::string> PromptIds(const std::vector<ReplyRecord>& records) {
  std::vector<std::string> ids;
  for (const ReplyRecord& record : records) ids.push_back(record.prompt_id);
  return ids;
}

TEST(SampleJournalTest, RepliesAreReadBackFromTheFileOnePerTaskByPromptId) {
  const std::string path = ::hb::testing::MakeTempDir() + "/out.jsonl.journal";
  const SampleJournalHeader header{"abc", -1, R"({"model":"m"})"};
  {
    HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SampleJournal> journal,
                            SampleJournal::Open(path, header));
    ASSERT_TRUE(AppendAndWait(*journal, {Reply("b"), Reply("a")}).ok());
    HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> records, journal->Replies(""));
    EXPECT_THAT(PromptIds(records), ElementsAre("a", "b"));
    EXPECT_EQ(records[1].reply, FormatSampledReply(Reply("b")));
    EXPECT_EQ(records[1].checkpoint, "");
  }
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<SampleJournal> journal,
                          SampleJournal::Open(path, header));
  // The replayed replies went to the caller; Replies still has them, from the file.
  EXPECT_THAT(journal->TakeReplayed(), SizeIs(2));
  EXPECT_THAT(journal->TakeReplayed(), IsEmpty());
  SampledReply second_a = Reply("a");
  second_a.response = "a later reply";
  ASSERT_TRUE(AppendAndWait(*journal, {Reply("c"), second_a}).ok());
  HB_ASSERT_OK_AND_ASSIGN(std::vector<ReplyRecord> records, journal->Replies(""));
  EXPECT_THAT(PromptIds(records), ElementsAre("a", "b", "c"));
  EXPECT_EQ(records[0].reply, FormatSampledReply(Reply("a")));  // the first one wins
}

TEST(SampleJournalTest, RefusesAJournalOfOtherSettings) {
  const std::string path = ::hb::testing::MakeTempDir() + "/j";
  ASSERT_TRUE(SampleJournal::Open(path, {"abc", -1, R"({"model":"m"})"}).ok());
  EXPECT_THAT(SampleJournal::Open(path, {"abc", 5, R"({"model":"m"})"}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("written by another sampling job")));
}

TEST(SampleJournalTest, ReplyLinesRoundTripWithTheSystemPrompt) {
  SampledReply reply = Reply("x");
  reply.system_prompt = "Be brief.";
  absl::StatusOr<SampledReply> parsed = ParseSampledReply(FormatSampledReply(reply));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->system_prompt, "Be brief.");
  EXPECT_EQ(FormatSampledReply(*parsed), FormatSampledReply(reply));
  EXPECT_THAT(ParseSampledReply(R"({"prompt_id":"x"})").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'response'")));
}

}  // namespace
}  // namespace hb
