// ParallelFor: splits [0, count) into contiguous chunks and runs them on up to
// hardware_concurrency() threads (the caller's included), returning when all are done. For
// CPU-bound, independent work on a single-threaded path (parsing a dataset's lines at start-up):
// each chunk writes only its own slots, and the caller reads the results after ParallelFor
// returns, so no locking is needed. Work smaller than two chunks of `min_per_chunk` runs inline.
//
//   std::vector<absl::StatusOr<Example>> parsed(lines.size(), absl::UnknownError(""));
//   ParallelFor(lines.size(), 256, [&](size_t begin, size_t end) {
//     for (size_t i = begin; i < end; ++i) parsed[i] = Parse(lines[i]);
//   });
//
// `fn` must be safe to call concurrently on disjoint ranges and must not throw.
#pragma once

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace hb {

void ParallelFor(size_t count, size_t min_per_chunk,
                 absl::FunctionRef<void(size_t begin, size_t end)> fn);

}  // namespace hb
