// CompareSession (offline_commands.h): `compare` again and again over a growing list of
// checkpoint folders writes what a fresh RunCompare writes, and reads a folder's tasks only when
// its files changed.
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/base/file.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/commands/offline_commands.h"
#include "orchestrator/report/checkpoint_report.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::MakeTempDir;
using ::hb::testing::SharedDataFile;
using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

class CompareSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir();
    const std::string dataset_path = SharedDataFile(::hb::testing::kMainHead30);
    HB_ASSERT_OK_AND_ASSIGN(dataset_, LoadDataset(dataset_path, {}));
    std::string replies;
    for (const Example& example : dataset_.examples) {
      absl::StrAppend(&replies, R"({"prompt_id":")", example.prompt_id,
                      R"(","response":"a reply"})", "\n");
    }
    HB_ASSERT_OK(WriteFileAtomically(dir_ + "/responses.jsonl", replies));
    HB_ASSERT_OK_AND_ASSIGN(responses_, LoadResponses(dir_ + "/responses.jsonl", dataset_));
    for (int k = 0; k < 5; ++k) WriteCheckpoint(k, /*variant=*/0);
  }

  // dir_/ck<k>: every row graded, met by a rule that depends on k and `variant`; checkpoint k
  // leaves task k ungraded (a failed row), so the tasks graded by every checkpoint shrink.
  void WriteCheckpoint(int k, int variant) {
    std::vector<VerdictRow> verdicts;
    std::vector<RowFailure> failures;
    for (size_t t = 0; t < dataset_.examples.size(); ++t) {
      const Example& example = dataset_.examples[t];
      for (size_t r = 0; r < example.rubrics.size(); ++r) {
        if (t == static_cast<size_t>(k) && r == 0) {
          failures.push_back({example.prompt_id, 0, "upstream returned 500"});
          continue;
        }
        const bool met = (t * 7 + r * 3 + k * 5 + variant) % 3 != 0;
        verdicts.push_back({example.prompt_id, static_cast<int>(r), met, "why", 1, 10, 0, 5});
      }
    }
    ReportContext context;
    context.checkpoint = absl::StrCat("ck", k);
    context.dataset_path = dataset_.path;
    context.dataset_sha256 = dataset_.sha256;
    context.responses_path = dir_ + "/responses.jsonl";
    context.responses_sha256 = responses_.sha256;
    context.template_sha256 = "feed";
    context.seed = 7;
    context.generated_at = "2026-01-02T03:04:05Z";
    HB_ASSERT_OK(WriteCheckpointReport(dataset_, responses_, verdicts, failures, context,
                                       absl::StrCat(dir_, "/ck", k))
                     .status());
  }

  std::vector<std::string> Folders(std::initializer_list<int> ks) {
    std::vector<std::string> dirs;
    for (int k : ks) dirs.push_back(absl::StrCat(dir_, "/ck", k));
    return dirs;
  }

  // The session's output (into dir_/s) equals a fresh RunCompare's (into dir_/f), byte for byte.
  void ExpectSameAsFresh(CompareSession& session, const std::vector<std::string>& dirs,
                         const std::string& baseline = "") {
    CompareOptions options{dir_ + "/s", baseline, dirs};
    HB_ASSERT_OK_AND_ASSIGN(const std::string said, session.Run(options));
    options.out = dir_ + "/f";
    HB_ASSERT_OK_AND_ASSIGN(const std::string fresh, RunCompare(options));
    EXPECT_EQ(said, absl::StrReplaceAll(fresh, {{dir_ + "/f/", dir_ + "/s/"}}));
    EXPECT_EQ(Read(dir_ + "/s/comparison.json"), Read(dir_ + "/f/comparison.json"));
    EXPECT_EQ(Read(dir_ + "/s/comparison.html"), Read(dir_ + "/f/comparison.html"));
  }

  std::string dir_;
  Dataset dataset_;
  ResponseSet responses_;
};

TEST_F(CompareSessionTest, AGrowingListWritesWhatAFreshCompareWrites) {
  CompareSession session;
  ExpectSameAsFresh(session, Folders({0, 1}));
  ExpectSameAsFresh(session, Folders({0, 1, 2}));
  ExpectSameAsFresh(session, Folders({0, 1, 2, 3, 4}));
  // Each checkpoint leaves its own task out: 30 - 5 tasks graded by all five.
  EXPECT_THAT(Read(dir_ + "/s/comparison.json"), HasSubstr(R"("common_tasks": 25)"));
  // Another baseline, and a checkpoint leaving the list (the common tasks grow back).
  ExpectSameAsFresh(session, Folders({0, 1, 2, 3, 4}), "ck3");
  ExpectSameAsFresh(session, Folders({0, 2, 4}));
  EXPECT_THAT(Read(dir_ + "/s/comparison.json"), HasSubstr(R"("common_tasks": 27)"));
}

// A folder whose files are the same files is not read again; a folder rewritten (as run
// rewrites it: new files renamed into place) is.
TEST_F(CompareSessionTest, ReadsAFolderAgainOnlyWhenItsFilesChanged) {
  CompareSession session;
  ExpectSameAsFresh(session, Folders({0, 1}));
  const std::string before = Read(dir_ + "/s/comparison.json");

  // Spoil ck1's tasks.jsonl in place, keeping its inode, size and modification time.
  const std::string tasks = dir_ + "/ck1/tasks.jsonl";
  struct stat st {};
  ASSERT_EQ(::stat(tasks.c_str(), &st), 0);
  std::FILE* file = std::fopen(tasks.c_str(), "r+");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(std::fputc('x', file), 'x');
  ASSERT_EQ(std::fclose(file), 0);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, tasks.c_str(), times, 0), 0);
  // A fresh compare reads it and fails; the session does not read it again.
  CompareOptions options{dir_ + "/f", "", Folders({0, 1})};
  EXPECT_FALSE(RunCompare(options).ok());
  options.out = dir_ + "/s";
  HB_ASSERT_OK(session.Run(options).status());
  EXPECT_EQ(Read(dir_ + "/s/comparison.json"), before);

  // ck1 graded again with other verdicts: read again, its difference computed again.
  WriteCheckpoint(1, /*variant=*/1);
  ExpectSameAsFresh(session, Folders({0, 1, 2}));
  EXPECT_NE(Read(dir_ + "/s/comparison.json"), before);
}

}  // namespace
}  // namespace hb
