// report.html of a large checkpoint: paginated task sections keep every page under the cap
// (orchestrator/report/html_report.h, kTasksPerPage). Slow-ish (5,000 real-sized tasks, ~85 MB
// written), so labelled integration.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "common/healthbench/dataset.h"
#include "common/healthbench/responses.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "orchestrator/report/checkpoint_report.h"
#include "orchestrator/report/html_report.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::MakeTempDir;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// 5,000 tasks cycled from the 30 real main records (fresh prompt ids), each answered with a
// realistic reply and fully graded with explanations: report.html must stay under 10 MB, with
// the task sections on pages that each stay small and together hold every task once.
TEST(ReportPaginationTest, AFiveThousandTaskReportStaysUnderTenMegabytes) {
  const std::string dir = MakeTempDir();
  HB_ASSERT_OK_AND_ASSIGN(
      Dataset real, LoadDataset(::hb::testing::SharedDataFile(::hb::testing::kMainHead30), {}));
  Dataset dataset;
  ResponseSet responses;
  std::vector<VerdictRow> verdicts;
  const std::string reply(1200, 'r');  // the median ideal completion's length
  for (size_t t = 0; t < 5000; ++t) {
    Example example = real.examples[t % real.examples.size()];
    example.prompt_id = absl::StrCat(example.prompt_id, "#", t);
    dataset.index[example.prompt_id] = t;
    responses.index[example.prompt_id] = t;
    responses.responses.push_back({example.prompt_id, reply, std::nullopt, static_cast<int>(t)});
    for (size_t i = 0; i < example.rubrics.size(); ++i) {
      verdicts.push_back({example.prompt_id, static_cast<int>(i), (t + i) % 3 == 0,
                          std::string(200, 'e'), 1, 0, 0, 0});
    }
    dataset.examples.push_back(std::move(example));
  }
  ReportContext context;
  context.checkpoint = "big";
  HB_ASSERT_OK_AND_ASSIGN(CheckpointResult result,
                          WriteCheckpointReport(dataset, responses, verdicts, {}, context, dir));
  EXPECT_EQ(result.graded, 5000);
  const std::string report = Read(dir + "/report.html");
  EXPECT_LT(report.size(), 10u << 20);
  EXPECT_EQ(TaskPageCount(5000), 50u);
  EXPECT_THAT(report, HasSubstr("href=\"report-tasks-50.html#task-5000\""));
  EXPECT_THAT(report, Not(HasSubstr("Rubrics with grades")));  // no task section inline
  size_t sections = 0, total = report.size();
  for (size_t page = 0; page < 50; ++page) {
    const std::string html = Read(dir + "/" + TaskPageFileName(page));
    EXPECT_LT(html.size(), 10u << 20);
    total += html.size();
    for (size_t at = html.find("class=\"task\""); at != std::string::npos;
         at = html.find("class=\"task\"", at + 1)) {
      ++sections;
    }
    EXPECT_THAT(html, HasSubstr(absl::StrCat("id=\"task-", page * kTasksPerPage + 1, "\"")));
  }
  EXPECT_EQ(sections, 5000u);
  EXPECT_GT(total, 10u << 20);  // as one page it would be over the cap
  EXPECT_FALSE(ReadFile(dir + "/" + TaskPageFileName(50)).ok());

  // A smaller report in the same folder keeps every task inline and drops the old pages.
  dataset.examples.resize(30);
  verdicts.clear();
  HB_ASSERT_OK_AND_ASSIGN(result,
                          WriteCheckpointReport(dataset, responses, verdicts, {}, context, dir));
  EXPECT_THAT(Read(dir + "/report.html"), HasSubstr("id=\"task-30\""));
  EXPECT_FALSE(ReadFile(dir + "/" + TaskPageFileName(0)).ok());
}

}  // namespace
}  // namespace hb
