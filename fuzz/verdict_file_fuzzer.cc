// LoadVerdicts and LoadFailures (orchestrator/report/verdict_file.h) on arbitrary files,
// checked against a small synthetic dataset.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_input.h"
#include "orchestrator/report/verdict_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = hb::fuzz::WriteInputFile(data, size);
  hb::LoadVerdicts(path, hb::fuzz::SyntheticDataset()).IgnoreError();
  hb::LoadFailures(path, hb::fuzz::SyntheticDataset()).IgnoreError();
  return 0;
}
