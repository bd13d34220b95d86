#include "tests/testing/shared_data.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

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

}  // namespace

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
  if (made == nullptr) ADD_FAILURE() << "mkdtemp failed under " << base;
  return pattern;
}

}  // namespace hb::testing
