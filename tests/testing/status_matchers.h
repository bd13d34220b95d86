// gMock matchers for absl::Status / absl::StatusOr, shaped like Abseil's newer
// absl/status/status_matchers.h (absent from Abseil 20220623).
//
//   EXPECT_THAT(LoadDataset(path, {}), StatusIs(absl::StatusCode::kInvalidArgument,
//                                               HasSubstr("line 3")));
//   EXPECT_THAT(ParseGraderReply(text), IsOkAndHolds(Field(&Verdict::criteria_met, true)));
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << "status: " << status;
  return status.ok();
}

MATCHER_P(IsOkAndHolds, matcher, "is OK and holds a value that matches") {
  if (!arg.ok()) {
    *result_listener << "status: " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + ::testing::PrintToString(code) + " and a matching message") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status: " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

}  // namespace hb::testing

#define HB_EXPECT_OK(expr) EXPECT_THAT((expr), ::hb::testing::IsOk())
#define HB_ASSERT_OK(expr) ASSERT_THAT((expr), ::hb::testing::IsOk())
// Asserts `rexpr` is OK and moves its value into `lhs`.
#define HB_ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  HB_ASSERT_OK_AND_ASSIGN_IMPL_(HB_TESTING_CONCAT_(hb_sor_, __LINE__), lhs, rexpr)
#define HB_TESTING_CONCAT_INNER_(a, b) a##b
#define HB_TESTING_CONCAT_(a, b) HB_TESTING_CONCAT_INNER_(a, b)
#define HB_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  ASSERT_TRUE(statusor.ok()) << statusor.status();          \
  lhs = *std::move(statusor)
