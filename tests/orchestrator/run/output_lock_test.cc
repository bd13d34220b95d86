#include "orchestrator/run/output_lock.h"

#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::HasSubstr;

TEST(OutputLockTest, ASecondHolderFailsAtOnceNamingTheFirstsPid) {
  const std::string dir = ::hb::testing::MakeTempDir();
  HB_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OutputLock> first, OutputLock::Acquire(dir));
  EXPECT_EQ(first->path(), dir + "/.lock");
  EXPECT_EQ(*ReadFile(dir + "/.lock"), absl::StrCat(::getpid(), "\n"));
  EXPECT_THAT(OutputLock::Acquire(dir),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat("another hb-orchestrator holds ", dir, "/.lock (pid ",
                                              ::getpid(), ")"))));
  first.reset();
  HB_EXPECT_OK(OutputLock::Acquire(dir).status());
}

TEST(OutputLockTest, AMissingFolderIsNamed) {
  const std::string dir = ::hb::testing::MakeTempDir() + "/missing";
  EXPECT_THAT(OutputLock::Acquire(dir),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(dir + "/.lock")));
}

}  // namespace
}  // namespace hb
