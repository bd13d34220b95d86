// CPython's `random.Random` core, bit for bit: the MT19937 generator seeded from a
// non-negative integer, getrandbits, _randbelow and sample(range(n), k). The reference picks
// its `--examples N` subset with random.Random(0).sample(...) (SPEC §12), so reproducing its
// subsets needs the very same draws.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace hb {

// Not thread-safe; one instance per sequence of draws. Copyable (the state is a value).
class PythonRandom {
 public:
  // Like random.Random(seed) for an int seed >= 0: init_by_array over the 32-bit words of
  // `seed`, least significant first (seed 0 is init_by_array([0])).
  explicit PythonRandom(uint64_t seed);

  // One raw MT19937 output (CPython's genrand_uint32).
  uint32_t NextUint32() { return static_cast<uint32_t>(engine_()); }

  // random.getrandbits(k) for 0 <= k <= 64 (k == 0 returns 0 and draws nothing).
  uint64_t GetRandBits(int k);

  // random._randbelow(n) (the getrandbits variant): uniform in [0, n). n must be > 0.
  uint64_t RandBelow(uint64_t n);

  // random.sample(range(n), k) for 0 <= k <= n: k distinct values in draw order, using the
  // same pool-swap or rejection-set method CPython 3.11 chooses.
  std::vector<uint64_t> SampleRange(uint64_t n, uint64_t k);

 private:
  // The generator is the standard one; only CPython's seeding (init_by_array) is ours.
  std::mt19937 engine_;
};

}  // namespace hb
