// Helpers shared by the fuzz targets whose entry points read files: the fuzzer's bytes as a
// file path (an in-memory file, rewritten on each call), and a small synthetic dataset the
// loaders check rows against. Fuzz targets only; single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/healthbench/dataset.h"

namespace hb::fuzz {

// Replaces the contents of this process's in-memory file with `data` and returns a path that
// opens it (/proc/self/fd/N). Aborts when the file cannot be created or written.
const std::string& WriteInputFile(const uint8_t* data, size_t size);

// Two tasks, "p1" (three rubric items) and "p2" (one), built once from synthetic JSONL.
const Dataset& SyntheticDataset();

}  // namespace hb::fuzz
