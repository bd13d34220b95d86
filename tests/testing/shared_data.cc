#include "tests/testing/shared_data.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace hb::testing {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string RequireFile(const std::string& path) {
  if (!Exists(path)) {
    ADD_FAILURE() << "missing " << path
                  << ": set HB_SHARED_DIR to the folder holding reference/ and "
                     "data/healthbench/ (default: ../shared beside the checkout)";
  }
  return path;
}

// Directories to remove when the process that made them exits.
struct TempDirRegistry {
  absl::Mutex mu;
  std::vector<std::pair<pid_t, std::string>> dirs ABSL_GUARDED_BY(mu);
};

TempDirRegistry& Registry() {
  static auto* registry = new TempDirRegistry;  // never destroyed: read by the exit handler
  return *registry;
}

void RemoveRegisteredDirs() {
  TempDirRegistry& registry = Registry();
  std::vector<std::pair<pid_t, std::string>> dirs;
  {
    absl::MutexLock lock(&registry.mu);
    dirs.swap(registry.dirs);
  }
  const bool keep =
      !EnvOr("HB_KEEP_TEST_TMPDIR", "").empty() || ::testing::UnitTest::GetInstance()->Failed();
  for (const auto& [pid, dir] : dirs) {
    if (pid != ::getpid()) continue;  // a forked child (death test, server) exiting
    if (keep) {
      std::fprintf(stderr, "kept for inspection: %s\n", dir.c_str());
      continue;
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
}

}  // namespace

void RemoveAtExit(const std::string& dir) {
  static const bool registered = (std::atexit(RemoveRegisteredDirs), true);
  (void)registered;
  TempDirRegistry& registry = Registry();
  absl::MutexLock lock(&registry.mu);
  registry.dirs.emplace_back(::getpid(), dir);
}

std::string SourceDir() { return EnvOr("HB_SOURCE_DIR", HB_DEFAULT_SOURCE_DIR); }

std::string BinaryDir() { return EnvOr("HB_BINARY_DIR", HB_DEFAULT_BINARY_DIR); }

std::string SharedDir() { return EnvOr("HB_SHARED_DIR", SourceDir() + "/../shared"); }

std::string SharedDataFile(const std::string& name) {
  return RequireFile(SharedDir() + "/data/healthbench/" + name);
}

std::string ReferenceTemplatePath() {
  return RequireFile(SharedDir() + "/reference/grader_template.txt");
}

std::string MakeTempDir() {
  std::string base = EnvOr("TEST_TMPDIR", "/tmp");
  std::string pattern = base + "/hb_test_XXXXXX";
  char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp failed under " << base;
  } else {
    RemoveAtExit(pattern);
  }
  return pattern;
}

}  // namespace hb::testing
