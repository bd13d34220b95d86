// Status propagation macros shaped like Abseil's newer ABSL_RETURN_IF_ERROR and
// ABSL_ASSIGN_OR_RETURN (absent from Abseil 20220623), so moving to them later is a rename.
//
//   HB_RETURN_IF_ERROR(store.Put(row));
//   HB_ASSIGN_OR_RETURN(Dataset dataset, LoadDataset(path, options));
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define HB_STATUS_CONCAT_INNER_(a, b) a##b
#define HB_STATUS_CONCAT_(a, b) HB_STATUS_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define HB_RETURN_IF_ERROR(expr)                \
  do {                                          \
    ::absl::Status hb_status_ = (expr);         \
    if (ABSL_PREDICT_FALSE(!hb_status_.ok())) { \
      return hb_status_;                        \
    }                                           \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, otherwise moves the
// value into `lhs` (a declaration or an existing lvalue).
#define HB_ASSIGN_OR_RETURN(lhs, rexpr) \
  HB_ASSIGN_OR_RETURN_IMPL_(HB_STATUS_CONCAT_(hb_statusor_, __LINE__), lhs, rexpr)

#define HB_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {             \
    return std::move(statusor).status();                \
  }                                                     \
  lhs = *std::move(statusor)
