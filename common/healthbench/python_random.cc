#include "common/healthbench/python_random.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace hb {
namespace {

constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;

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
  InitByArray(key);
}

void PythonRandom::InitGenrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  mti_ = kN;
}

void PythonRandom::InitByArray(const std::vector<uint32_t>& key) {
  InitGenrand(19650218U);
  const size_t key_length = key.size();
  size_t i = 1;
  size_t j = 0;
  for (size_t k = std::max(static_cast<size_t>(kN), key_length); k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= static_cast<size_t>(kN)) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key_length) j = 0;
  }
  for (size_t k = kN - 1; k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= static_cast<size_t>(kN)) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;  // MSB is 1, assuring a non-zero initial array.
  mti_ = kN;
}

uint32_t PythonRandom::NextUint32() {
  static constexpr uint32_t kMag01[2] = {0x0U, kMatrixA};
  if (mti_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ kMag01[y & 0x1U];
    }
    for (; kk < kN - 1; ++kk) {
      uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ kMag01[y & 0x1U];
    }
    uint32_t y = (mt_[kN - 1] & kUpperMask) | (mt_[0] & kLowerMask);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ kMag01[y & 0x1U];
    mti_ = 0;
  }
  uint32_t y = mt_[mti_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
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
