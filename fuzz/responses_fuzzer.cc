// LoadResponses (common/healthbench/responses.h) on arbitrary files (plain or gzip), checked
// against a small synthetic dataset.
#include <cstddef>
#include <cstdint>

#include "common/healthbench/responses.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = hb::fuzz::WriteInputFile(data, size);
  hb::LoadResponses(path, hb::fuzz::SyntheticDataset()).IgnoreError();
  return 0;
}
