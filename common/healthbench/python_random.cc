#include "common/healthbench/python_random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace hb {
namespace {

constexpr size_t kN = std::mt19937::state_size;

// CPython's init_by_array(key) as a seed sequence for std::mt19937: generate() writes the 624
// state words init_by_array computes (mt[0] is 0x80000000, so the engine's all-zero fix-up
// never applies, and the engine twists before its first output, as CPython does).
class InitByArraySeq {
 public:
  using result_type = uint32_t;
  explicit InitByArraySeq(std::vector<uint32_t> key) : key_(std::move(key)) {}

  template <typename It>
  void generate(It begin, It end) const {
    std::vector<uint32_t> mt(kN);
    mt[0] = 19650218U;  // init_genrand(19650218)
    for (size_t i = 1; i < kN; ++i) {
      mt[i] = 1812433253U * (mt[i - 1] ^ (mt[i - 1] >> 30)) + static_cast<uint32_t>(i);
    }
    size_t i = 1;
    size_t j = 0;
    for (size_t k = std::max(kN, key_.size()); k > 0; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U)) + key_[j] +
              static_cast<uint32_t>(j);
      if (++i >= kN) {
        mt[0] = mt[kN - 1];
        i = 1;
      }
      if (++j >= key_.size()) j = 0;
    }
    for (size_t k = kN - 1; k > 0; --k) {
      mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
      if (++i >= kN) {
        mt[0] = mt[kN - 1];
        i = 1;
      }
    }
    mt[0] = 0x80000000U;  // MSB is 1, assuring a non-zero initial array.
    std::copy(mt.begin(), mt.begin() + std::min<std::ptrdiff_t>(end - begin, kN), begin);
  }

 private:
  std::vector<uint32_t> key_;
};

int BitLength(uint64_t n) {
  int bits = 0;
  while (n != 0) {
    ++bits;
    n >>= 1;
  }
  return bits;
}

}  // namespace

PythonRandom::PythonRandom(uint64_t seed) {
  // CPython's random_seed: the absolute value's 32-bit words, little end first, at least one.
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(seed & 0xffffffffU));
    seed >>= 32;
  } while (seed != 0);
  InitByArraySeq seq(std::move(key));
  engine_.seed(seq);
}

uint64_t PythonRandom::GetRandBits(int k) {
  if (k <= 0) return 0;
  if (k <= 32) return NextUint32() >> (32 - k);
  // CPython fills 32-bit words from least to most significant; the last word keeps its top
  // bits only.
  uint64_t low = NextUint32();
  uint64_t high = NextUint32() >> (64 - k);
  return (high << 32) | low;
}

uint64_t PythonRandom::RandBelow(uint64_t n) {
  const int bits = BitLength(n);
  uint64_t r = GetRandBits(bits);
  while (r >= n) r = GetRandBits(bits);
  return r;
}

std::vector<uint64_t> PythonRandom::SampleRange(uint64_t n, uint64_t k) {
  std::vector<uint64_t> result;
  result.reserve(static_cast<size_t>(k));
  // setsize = 21 (+ 4 ** ceil(log(3k, 4)) when k > 5): the size below which a list copy is
  // cheaper than a set. Python's math.log(x, 4) is log(x) / log(4) in double precision.
  double setsize = 21;
  if (k > 5) {
    setsize += std::pow(4.0, std::ceil(std::log(3.0 * static_cast<double>(k)) / std::log(4.0)));
  }
  if (static_cast<double>(n) <= setsize) {
    std::vector<uint64_t> pool(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) pool[i] = i;
    for (uint64_t i = 0; i < k; ++i) {
      uint64_t j = RandBelow(n - i);
      result.push_back(pool[j]);
      pool[j] = pool[n - i - 1];
    }
    return result;
  }
  absl::flat_hash_set<uint64_t> selected;
  selected.reserve(static_cast<size_t>(k));
  for (uint64_t i = 0; i < k; ++i) {
    uint64_t j = RandBelow(n);
    while (selected.contains(j)) j = RandBelow(n);
    selected.insert(j);
    result.push_back(j);
  }
  return result;
}

}  // namespace hb
