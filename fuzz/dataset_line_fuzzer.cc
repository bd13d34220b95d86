// ParseExample (common/healthbench/dataset.h), the dataset loader's per-line parser and
// validator, on arbitrary lines.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/healthbench/dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  hb::ParseExample(line, "fuzz.jsonl", 1).IgnoreError();
  return 0;
}
