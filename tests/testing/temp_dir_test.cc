// MakeTempDir's directories are removed when the process that made them exits, and only by it:
// the suite once left ~1,000 directories (~270 MB) in /tmp per CI run.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/shared_data.h"

namespace hb::testing {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Forks a child that makes a temporary directory with a file in it, sends its path back and
// exits normally (exit handlers run). Returns the path, or "" when the child failed.
std::string DirMadeByAChild(bool keep) {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  const pid_t child = ::fork();
  if (child == 0) {
    if (keep) ::setenv("HB_KEEP_TEST_TMPDIR", "1", 1);
    const std::string line = MakeTempDir() + "\n";
    std::ofstream(line.substr(0, line.size() - 1) + "/nested.txt") << "made by the child";
    if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      std::_Exit(2);
    }
    std::exit(0);
  }
  ::close(fds[1]);
  char buffer[512];
  const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n < 2) return "";
  return std::string(buffer, static_cast<size_t>(n) - 1);
}

TEST(TempDirTest, AChildRemovesItsOwnDirectoriesOnExitAndNotItsParents) {
  const std::string parents = MakeTempDir();
  std::ofstream(parents + "/file") << "kept";
  const std::string childs = DirMadeByAChild(/*keep=*/false);
  ASSERT_FALSE(childs.empty());
  EXPECT_NE(childs, parents);
  EXPECT_FALSE(Exists(childs)) << childs << " outlived the child that made it";
  EXPECT_TRUE(Exists(parents + "/file")) << "a child's exit removed its parent's directory";
}

TEST(TempDirTest, HbKeepTestTmpdirKeepsTheDirectories) {
  const std::string kept = DirMadeByAChild(/*keep=*/true);
  ASSERT_FALSE(kept.empty());
  EXPECT_TRUE(Exists(kept + "/nested.txt"));
  RemoveAtExit(kept);  // this process cleans up after the child
}

}  // namespace
}  // namespace hb::testing
