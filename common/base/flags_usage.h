// Makes `--help` list every flag the project defines (Abseil's default shows only flags from a
// file named like the program), with `usage` as the program's description.
#pragma once

namespace hb {

// Call first thing in main(), before absl::ParseCommandLine.
void InitFlagsUsage(const char* usage);

}  // namespace hb
