#include "common/base/exit_codes.h"

#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(ExitCodesTest, OneStatusToExitCodeMapping) {
  EXPECT_EQ(ExitCodeFor(absl::OkStatus()), kExitOk);
  for (const absl::Status& caller :
       {absl::InvalidArgumentError("x"), absl::NotFoundError("x"), absl::PermissionDeniedError("x"),
        absl::DataLossError("x"), absl::FailedPreconditionError("x"), absl::OutOfRangeError("x")}) {
    EXPECT_EQ(ExitCodeFor(caller), kExitUsage) << caller;
  }
  for (const absl::Status& ours : {absl::InternalError("x"), absl::UnavailableError("x"),
                                   absl::UnknownError("x"), absl::ResourceExhaustedError("x")}) {
    EXPECT_EQ(ExitCodeFor(ours), kExitInternal) << ours;
  }
}

}  // namespace
}  // namespace hb
