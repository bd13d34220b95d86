#include "grader/grader_identity.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/base/sha256.h"
#include "common/healthbench/grader_request_body.h"
#include "gmock/gmock.h"
#include "grader/grader_settings.h"
#include "grader/verdict_cache.h"
#include "gtest/gtest.h"

namespace hb {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

GraderIdentity Reference() {
  GraderIdentity identity;  // the reference's settings (SPEC §5)
  identity.template_sha256 = "abc";
  return identity;
}

std::vector<std::string> JournalKeysAndValues(const GraderIdentity& identity) {
  std::vector<std::string> out;
  for (const IdentityField& f : IdentityFields(identity))
    out.push_back(f.journal_key + "=" + f.value);
  return out;
}

TEST(GraderIdentityTest, FieldsAreTheJournalsKeysWithTheirValues) {
  // The keys and value formats of journals written before the identity existed: a journal of an
  // earlier version resumes with the same grader.
  EXPECT_THAT(
      JournalKeysAndValues(Reference()),
      ElementsAre("grader_model=gpt-4.1-2025-04-14", "grader_temperature=0.5",
                  "grader_max_tokens=2048", "grader_system_message=You are a helpful assistant.",
                  "template_sha256=abc"));
}

TEST(GraderIdentityTest, EveryFieldChangesTheFingerprint) {
  const std::string reference = IdentityFingerprint(Reference());
  EXPECT_EQ(reference, IdentityFingerprint(Reference()));
  EXPECT_EQ(reference.size(), 64u);
  const std::vector<std::function<void(GraderIdentity&)>> changes = {
      [](GraderIdentity& g) { g.settings.model = "gpt-5.4-2026-03-05"; },
      [](GraderIdentity& g) { g.settings.temperature = 0.6; },
      [](GraderIdentity& g) { g.settings.max_tokens = 2049; },
      [](GraderIdentity& g) { g.settings.system_message = ""; },
      [](GraderIdentity& g) { g.template_sha256 = "abd"; },
      [](GraderIdentity& g) { g.settings.api = GraderApi::kResponses; },
      [](GraderIdentity& g) { g.settings.reasoning_effort = "low"; },
      [](GraderIdentity& g) { g.settings.extra_body = R"({"guided_json":{}})"; },
      [](GraderIdentity& g) {
        g.settings.headers = {GraderHeader{"api-key", "k", "sha-k"}};
      },
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    GraderIdentity changed = Reference();
    changes[i](changed);
    EXPECT_NE(IdentityFingerprint(changed), reference) << "change " << i;
  }
}

// A GPT-5.4 grader through the Responses API is never the gpt-4.1 chat grader, nor the same
// model at another effort: for the journal and hb-env's result cache (the identity) and for the
// verdict cache (the request body).
TEST(GraderIdentityTest, ApiAndReasoningEffortAreListedWhenSetAndSeparateEveryCache) {
  GraderIdentity low = Reference();
  low.settings.model = "gpt-5.4-2026-03-05";
  low.settings.api = GraderApi::kResponses;
  low.settings.reasoning_effort = "low";
  EXPECT_THAT(
      JournalKeysAndValues(low),
      ElementsAre("grader_model=gpt-5.4-2026-03-05", "grader_temperature=0.5",
                  "grader_max_tokens=2048", "grader_system_message=You are a helpful assistant.",
                  "template_sha256=abc", "grader_api=responses", "grader_reasoning_effort=low"));
  GraderIdentity high = low;
  high.settings.reasoning_effort = "high";
  GraderIdentity chat = low;
  chat.settings.api = GraderApi::kChatCompletions;
  chat.settings.reasoning_effort.clear();
  const std::vector<std::string> fingerprints = {
      IdentityFingerprint(Reference()), IdentityFingerprint(low), IdentityFingerprint(high),
      IdentityFingerprint(chat)};
  const std::vector<std::string> cache_keys = {
      VerdictCacheKey(Reference().settings, "P"), VerdictCacheKey(low.settings, "P"),
      VerdictCacheKey(high.settings, "P"), VerdictCacheKey(chat.settings, "P")};
  for (size_t i = 0; i < fingerprints.size(); ++i) {
    for (size_t j = i + 1; j < fingerprints.size(); ++j) {
      EXPECT_NE(fingerprints[i], fingerprints[j]) << i << " " << j;
      EXPECT_NE(cache_keys[i], cache_keys[j]) << i << " " << j;
    }
  }
}

TEST(GraderIdentityTest, ValuesCannotBleedIntoEachOther) {
  // Length prefixes: moving text from one field to the next changes the fingerprint.
  GraderIdentity a = Reference();
  a.settings.model = "m\n";
  a.settings.system_message = "s";
  GraderIdentity b = Reference();
  b.settings.model = "m";
  b.settings.system_message = "\ns";
  EXPECT_NE(IdentityFingerprint(a), IdentityFingerprint(b));
}

TEST(GraderIdentityTest, FirstDifferenceLooksBothWays) {
  EXPECT_EQ(FirstIdentityDifference(Reference(), Reference()), std::nullopt);
  GraderIdentity a = Reference();
  a.settings.max_tokens = 16;
  std::optional<IdentityDifference> d = FirstIdentityDifference(a, Reference());
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->name, "max_tokens");
  EXPECT_EQ(d->flag, "--llm-max-tokens");
  EXPECT_EQ(d->a_value, "16");
  EXPECT_EQ(d->b_value, "2048");
  // A field only the second identity lists (at its default, so unlisted, in the first).
  GraderIdentity b = Reference();
  b.settings.reasoning_effort = "low";
  d = FirstIdentityDifference(Reference(), b);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->name, "reasoning_effort");
  EXPECT_EQ(d->a_value, "");
  EXPECT_EQ(d->b_value, "low");
}

// Any OpenAI-compatible judge: the extra body in full and the headers by name and the sha256
// of their values are part of the identity, listed only when set (journals and caches written
// before them stay valid), and a cache filled with one judge does not answer another.
TEST(GraderIdentityTest, ExtraBodyAndHeadersAreListedWhenSetAndSeparateEveryCache) {
  GraderIdentity judge = Reference();
  judge.settings.extra_body = R"({"guided_json":{"type":"object"}})";
  absl::StatusOr<std::vector<GraderHeader>> headers =
      ParseGraderHeaders({"api-key=SECRET-1", "X-Gateway=team-a"});
  ASSERT_TRUE(headers.ok()) << headers.status();
  judge.settings.headers = *headers;
  const std::vector<std::string> keys = JournalKeysAndValues(judge);
  ASSERT_EQ(keys.size(), 7u);
  EXPECT_EQ(keys[5], R"(grader_extra_body={"guided_json":{"type":"object"}})");
  EXPECT_EQ(keys[6], "grader_headers=api-key:" + Sha256Hex("SECRET-1") +
                         ",x-gateway:" + Sha256Hex("team-a"));
  for (const std::string& key : keys) EXPECT_THAT(key, Not(HasSubstr("SECRET")));

  // Another key for the same header is another judge; so is no extra body.
  GraderIdentity other_key = judge;
  other_key.settings.headers = *ParseGraderHeaders({"api-key=SECRET-2", "X-Gateway=team-a"});
  GraderIdentity no_extra = judge;
  no_extra.settings.extra_body.clear();
  GraderIdentity no_headers = judge;
  no_headers.settings.headers.clear();
  const std::vector<GraderIdentity> judges = {Reference(), judge, other_key, no_extra, no_headers};
  for (size_t i = 0; i < judges.size(); ++i) {
    for (size_t j = i + 1; j < judges.size(); ++j) {
      EXPECT_NE(IdentityFingerprint(judges[i]), IdentityFingerprint(judges[j])) << i << " " << j;
      EXPECT_NE(VerdictCacheKey(judges[i].settings, "P"), VerdictCacheKey(judges[j].settings, "P"))
          << i << " " << j;
    }
  }
  // Settings read back from a record carry only the values' sha256: the same identity.
  GraderIdentity recorded = judge;
  for (GraderHeader& header : recorded.settings.headers) header.value.clear();
  EXPECT_EQ(IdentityFingerprint(recorded), IdentityFingerprint(judge));
  EXPECT_EQ(FirstIdentityDifference(recorded, judge), std::nullopt);
  // The header order does not matter; the first difference names the flag.
  GraderIdentity swapped = judge;
  std::swap(swapped.settings.headers[0], swapped.settings.headers[1]);
  EXPECT_EQ(IdentityFingerprint(swapped), IdentityFingerprint(judge));
  std::optional<IdentityDifference> d = FirstIdentityDifference(Reference(), judge);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->name, "extra_body");
  EXPECT_EQ(d->flag, "--llm-extra-body");
  EXPECT_EQ(d->a_value, "");
}

// A grader without the new settings keeps the verdict cache keys it always had: the sha256 of
// the request body alone.
TEST(GraderIdentityTest, VerdictCacheKeyOfAPlainGraderIsTheBodysSha256) {
  EXPECT_EQ(VerdictCacheKey(GraderSettings{}, "P"),
            Sha256Hex(BuildGraderRequestBody(GraderSettings{}, "P")));
}

}  // namespace
}  // namespace hb
