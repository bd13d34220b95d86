// Where tests find the real HealthBench records and the reference template: the `shared/`
// folder beside the checkout. They are never copied into the project (OpenAI asks that the
// examples not be reposted; the template is OpenAI's text).
//
// HB_SHARED_DIR overrides the location; the default is "<source dir>/../shared". A missing
// file fails the test loudly (never a skip), naming the variable to set.
#pragma once

#include <string>

namespace hb::testing {

// The shared folder (no trailing slash).
std::string SharedDir();
// "<shared>/data/healthbench/<name>"; fails the current test when the file is missing.
std::string SharedDataFile(const std::string& name);
// "<shared>/reference/grader_template.txt"; fails the current test when missing.
std::string ReferenceTemplatePath();
// The project's source folder: HB_SOURCE_DIR when set, else the folder this build was
// configured from (ctest sets no variable but TSAN_OPTIONS, see cmake/HbHelpers.cmake).
std::string SourceDir();
// The build folder, where the binaries are: HB_BINARY_DIR when set, else this build's folder.
std::string BinaryDir();
// A fresh, empty temporary directory for this test, under TEST_TMPDIR or /tmp. It is removed
// when the test binary exits (RemoveAtExit).
std::string MakeTempDir();
// Removes `dir` and everything under it when this process exits normally, unless a test of the
// binary failed or HB_KEEP_TEST_TMPDIR is set (then its path is printed to stderr and it stays
// for inspection). A forked child that exits removes nothing. Thread-safe.
void RemoveAtExit(const std::string& dir);

// The reference Python (Debian's, with numpy) that the cross-check tests run
// scripts/reference/*.py with.
inline constexpr char kPython[] = "/usr/bin/python3";

inline constexpr char kMainHead30[] = "2025-05-07-06-14-12_oss_eval.head30.jsonl";
inline constexpr char kHardHead4[] = "hard_2025-05-08-21-00-10.head4.jsonl";
inline constexpr char kConsensus104[] = "consensus_2025-05-09-20-00-46.subset104.jsonl";

}  // namespace hb::testing
