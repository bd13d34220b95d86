// Command-line parsing shared by every binary: `--help` lists every flag the project defines
// (Abseil's default shows only flags from a file named like the program), and flag names may
// be written with hyphens as documented (`--llm-base-url`) or with Abseil's underscores.
#pragma once

#include <string>
#include <vector>

namespace hb {

// Sets the usage message and the help filter. Call first thing in main(), before parsing.
void InitFlagsUsage(const char* usage);

// Rewrites "--foo-bar[=v]" to "--foo_bar[=v]" (names only, never values; stops at "--").
std::vector<std::string> NormalizeFlagNames(int argc, char** argv);

// InitFlagsUsage + NormalizeFlagNames + absl::ParseCommandLine. Returns the positional
// arguments (argv[0] first). Unknown flags and bad values exit(1) with Abseil's message.
std::vector<std::string> ParseFlags(int argc, char** argv, const char* usage);

}  // namespace hb
