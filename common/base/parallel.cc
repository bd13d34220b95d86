#include "common/base/parallel.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace hb {

void ParallelFor(size_t count, size_t min_per_chunk,
                 absl::FunctionRef<void(size_t begin, size_t end)> fn) {
  const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t chunks = std::min({cores, size_t{8}, count / std::max<size_t>(1, min_per_chunk)});
  if (chunks <= 1) {
    if (count > 0) fn(0, count);
    return;
  }
  const size_t per_chunk = (count + chunks - 1) / chunks;
  std::vector<std::thread> threads;
  threads.reserve(chunks - 1);
  for (size_t begin = per_chunk; begin < count; begin += per_chunk) {
    threads.emplace_back(
        [&fn, begin, end = std::min(count, begin + per_chunk)] { fn(begin, end); });
  }
  fn(0, std::min(count, per_chunk));
  for (std::thread& thread : threads) thread.join();
}

}  // namespace hb
