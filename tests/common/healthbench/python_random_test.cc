#include "common/healthbench/python_random.h"

#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/healthbench/dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rapidjson/document.h"
#include "tests/testing/loopback.h"
#include "tests/testing/shared_data.h"

namespace hb {
namespace {

using ::hb::testing::kPython;
using ::testing::ElementsAre;

// Hard-coded values printed by CPython 3.11 (they hold without Python installed).
TEST(PythonRandomTest, RawOutputsMatchCPython) {
  PythonRandom zero(0);
  EXPECT_EQ(zero.NextUint32(), 3626764237u);
  EXPECT_EQ(zero.NextUint32(), 1654615998u);
  EXPECT_EQ(zero.GetRandBits(32), 3255389356u);

  PythonRandom seeded(12345);
  EXPECT_EQ(seeded.GetRandBits(64), 13515657874892102023ull);
  EXPECT_EQ(seeded.GetRandBits(33), 4338643525ull);
  EXPECT_EQ(seeded.GetRandBits(1), 1u);

  // A seed wider than 32 bits seeds from two words.
  EXPECT_EQ(PythonRandom((uint64_t{1} << 40) + 5).GetRandBits(32), 2166296868u);
}

TEST(PythonRandomTest, RandBelowAndSampleMatchCPython) {
  PythonRandom zero(0);
  std::vector<uint64_t> below;
  for (int i = 0; i < 5; ++i) below.push_back(zero.RandBelow(10));
  EXPECT_THAT(below, ElementsAre(6, 6, 0, 4, 8));
  // k == n uses the pool method; n beyond 32 bits uses 64-bit getrandbits.
  EXPECT_THAT(PythonRandom(1).SampleRange(5, 5), ElementsAre(1, 0, 4, 3, 2));
  EXPECT_THAT(PythonRandom(0).SampleRange(uint64_t{1} << 40, 3),
              ElementsAre(849735321549ull, 87705687125ull, 1067347797602ull));
  EXPECT_TRUE(PythonRandom(0).SampleRange(10, 0).empty());
}

std::vector<size_t> ParseIndexList(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str());
  std::vector<size_t> out;
  if (doc.HasParseError() || !doc.IsArray()) {
    ADD_FAILURE() << "not a JSON list: " << json;
    return out;
  }
  for (const auto& v : doc.GetArray()) out.push_back(static_cast<size_t>(v.GetUint64()));
  return out;
}

// Cross-checks against the real CPython; /usr/bin/python3 is part of the toolchain (installed
// by scripts/setup.sh), so its absence is a failure, not a skip.
TEST(PythonRandomTest, SampleIndicesMatchesLiveCPython) {
  ASSERT_EQ(::access(kPython, X_OK), 0)
      << kPython << " is missing: run scripts/setup.sh (it installs the reference Python)";
  const std::string script = hb::testing::SourceDir() + "/scripts/reference/sample_indices.py";
  struct Case {
    size_t n, k;
    unsigned long seed;
  };
  const std::vector<Case> cases = {
      {5000, 10, 0},        {5000, 1, 0},       {7, 5, 0},         {20, 5, 1},
      {26, 6, 0},           {30, 5, 12345},     {30, 29, 0},       {100, 99, 1},
      {1000, 100, 0},       {5000, 100, 12345}, {29511, 1000, 0},  {3671, 3670, 0},
      {2, 1, 4294967296ul}, {1, 0, 0},          {1u << 20, 3, 99},
  };
  std::vector<std::string> argv = {kPython, script};
  for (const Case& c : cases) argv.push_back(absl::StrCat(c.n, ",", c.k, ",", c.seed));
  const hb::testing::ProcessResult python = hb::testing::RunProcess(argv);
  ASSERT_EQ(python.exit_code, 0) << python.err;
  std::vector<std::string> lines = absl::StrSplit(python.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    EXPECT_EQ(SampleIndices(c.n, c.k, c.seed), ParseIndexList(lines[i]))
        << "n=" << c.n << " k=" << c.k << " seed=" << c.seed;
  }
}

}  // namespace
}  // namespace hb
