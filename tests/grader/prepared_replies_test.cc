// PreparedReplies: the items of one reply graded by separate calls share one rendered reply
// while any holds it, and the table forgets it when the last holder lets go.
#include "grader/prepared_replies.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace hb {
namespace {

std::unique_ptr<PreparedReply> Reply(std::string text, std::string key) {
  auto reply = std::make_unique<PreparedReply>();
  reply->prompt.text = std::move(text);
  reply->prompt_cache_key = std::move(key);
  return reply;
}

TEST(PreparedRepliesTest, ALiveReplyIsFoundByItsPromptAndKey) {
  auto table = PreparedReplies::Create();
  std::shared_ptr<const PreparedReply> first = table->Add(Reply("prompt", "k"));
  EXPECT_EQ(table->Find("prompt", "k"), first);
  EXPECT_EQ(table->Find("prompt", "other key"), nullptr);
  EXPECT_EQ(table->Find("other prompt", "k"), nullptr);
  // A second rendering of the same reply gives way to the live one.
  EXPECT_EQ(table->Add(Reply("prompt", "k")), first);
  EXPECT_EQ(table->size(), 1u);
}

TEST(PreparedRepliesTest, TheEntryGoesWithTheLastHolder) {
  auto table = PreparedReplies::Create();
  std::shared_ptr<const PreparedReply> first = table->Add(Reply("prompt", ""));
  std::shared_ptr<const PreparedReply> second = table->Find("prompt", "");
  first.reset();
  EXPECT_EQ(table->size(), 1u);
  second.reset();
  EXPECT_EQ(table->size(), 0u);
  EXPECT_EQ(table->Find("prompt", ""), nullptr);
  // Rendered again later: a new entry.
  std::shared_ptr<const PreparedReply> again = table->Add(Reply("prompt", ""));
  EXPECT_EQ(table->Find("prompt", ""), again);
}

TEST(PreparedRepliesTest, RepliesMayOutliveWhoeverCreatedTheTable) {
  auto table = PreparedReplies::Create();
  std::shared_ptr<const PreparedReply> reply = table->Add(Reply("prompt", ""));
  std::weak_ptr<PreparedReplies> weak = table;
  table.reset();                 // the Grader is gone...
  EXPECT_FALSE(weak.expired());  // ...the reply's deleter still holds the table
  reply.reset();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace hb
