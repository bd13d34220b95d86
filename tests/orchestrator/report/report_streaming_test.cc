// The pieces the reports are streamed through: AtomicFileWriter (common/base/file.h) and the
// HTML page rendered head / task by task / tail (orchestrator/report/html_report.h).
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/report/html_report.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::IsOkAndHolds;
using ::hb::testing::MakeTempDir;
using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string TmpPath(const std::string& path) { return absl::StrCat(path, ".tmp.", ::getpid()); }

TEST(AtomicFileWriterTest, StreamsAcrossBufferBoundariesAndAppearsOnlyOnCommit) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/out.txt";
  HB_ASSERT_OK(WriteFileAtomically(path, "old"));
  // A 4-byte buffer: pieces smaller than, equal to and larger than it.
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicFileWriter> writer,
                          AtomicFileWriter::Open(path, 4));
  std::string expected;
  for (const char* piece : {"a", "bc", "defg", "", "hijklmnopq", "r", "stuvw", "xyz\n"}) {
    writer->Append(piece);
    expected += piece;
  }
  // Until Commit, readers still see the old file; the bytes so far sit in the temporary file.
  EXPECT_THAT(ReadFile(path), IsOkAndHolds(std::string("old")));
  EXPECT_TRUE(Exists(TmpPath(path)));
  HB_EXPECT_OK(writer->Commit());
  EXPECT_THAT(ReadFile(path), IsOkAndHolds(expected));
  EXPECT_FALSE(Exists(TmpPath(path)));
  EXPECT_THAT(writer->Commit(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already committed")));
  writer.reset();
  EXPECT_THAT(ReadFile(path), IsOkAndHolds(expected));
}

TEST(AtomicFileWriterTest, DroppedWithoutCommitLeavesTheOldFileAndNoTemporary) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/out.txt";
  HB_ASSERT_OK(WriteFileAtomically(path, "old"));
  {
    HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicFileWriter> writer,
                            AtomicFileWriter::Open(path, 2));
    writer->Append("partial contents");
  }
  EXPECT_THAT(ReadFile(path), IsOkAndHolds(std::string("old")));
  EXPECT_FALSE(Exists(TmpPath(path)));
}

TEST(AtomicFileWriterTest, EmptyFileAndDefaultBuffer) {
  const std::string dir = MakeTempDir();
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicFileWriter> empty,
                          AtomicFileWriter::Open(dir + "/empty"));
  HB_EXPECT_OK(empty->Commit());
  EXPECT_THAT(ReadFile(dir + "/empty"), IsOkAndHolds(std::string()));

  // More than the default 1 MiB buffer, in lines.
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AtomicFileWriter> big,
                          AtomicFileWriter::Open(dir + "/big"));
  std::string expected;
  for (int i = 0; i < 40000; ++i) {
    std::string line = absl::StrCat("line ", i, " ", std::string(i % 97, 'x'), "\n");
    big->Append(line);
    expected += line;
  }
  ASSERT_GT(expected.size(), size_t{1} << 21);
  HB_EXPECT_OK(big->Commit());
  EXPECT_THAT(ReadFile(dir + "/big"), IsOkAndHolds(expected));
}

TEST(AtomicFileWriterTest, OpenErrorsNameThePath) {
  const std::string dir = MakeTempDir();
  EXPECT_THAT(AtomicFileWriter::Open(dir + "/missing/out.txt").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(dir + "/missing/out.txt")));
}

HtmlReport SampleReport() {
  HtmlReport report;
  report.checkpoint = "step<1>";
  report.score = 0.25;
  report.score_bootstrap_std = 0.125;
  report.simulated = true;
  report.incomplete = true;
  report.facts = {{"tasks graded", "2 of 3"}, {"dataset", "d & e"}};
  for (int i = 0; i < 3; ++i) {
    HtmlTask task;
    task.prompt_id = absl::StrCat("p", i);
    if (i != 1) task.score = 0.5 - i * 0.25;
    task.error = i == 1 ? "1 of 2 rubric rows failed: [0] UNAVAILABLE" : "";
    task.example_tags = {"theme:x", absl::StrCat("axis:", i)};
    task.conversation = {{"user", absl::StrCat("question ", i, " <b>")},
                         {"assistant", absl::StrCat("reply ", i)}};
    task.has_response = i != 2;
    HtmlRubricRow met;
    met.criterion = "says 'hello'";
    met.points_text = "5";
    met.criteria_met = i == 0;
    met.explanation = "because";
    HtmlRubricRow failed;
    failed.criterion = "other";
    failed.points_text = "-3";
    failed.failure = i == 1 ? "UNAVAILABLE" : "";
    task.rubric = {met, failed};
    report.tasks.push_back(task);
  }
  return report;
}

TEST(HtmlReportPiecesTest, HeadTasksAndTailMakeTheWholePage) {
  const HtmlReport report = SampleReport();
  // The head only reads each task's prompt_id and score.
  HtmlReport light = report;
  for (HtmlTask& task : light.tasks) {
    HtmlTask slim;
    slim.prompt_id = task.prompt_id;
    slim.score = task.score;
    task = slim;
  }
  std::string streamed = HtmlReportHead(light);
  for (size_t i = 0; i < report.tasks.size(); ++i) {
    std::string section;
    AppendHtmlReportTask(section, report.tasks[i], i);
    EXPECT_THAT(section, HasSubstr(absl::StrCat("id=\"task-", i + 1, "\"")));
    streamed += section;
  }
  streamed += HtmlReportTail();
  const std::string whole = RenderHtmlReport(report);
  EXPECT_EQ(streamed, whole);
  EXPECT_THAT(whole, HasSubstr("question 0 &lt;b&gt;"));
  EXPECT_THAT(whole, HasSubstr("href=\"#task-3\""));
  EXPECT_EQ(whole.substr(whole.size() - HtmlReportTail().size()), "</body>\n</html>\n");
}

}  // namespace
}  // namespace hb
