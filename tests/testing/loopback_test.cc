#include "tests/testing/loopback.h"

#include <unistd.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The loopback server reads requests like every listener of the project (BoundedEvhttp): a head
// over 64 KB is answered 431 in JSON while it arrives, never reaching the handler; a request
// within the limits is served.
TEST(LoopbackHttpServerTest, ReadsRequestsThroughBoundedEvhttp) {
  absl::StatusOr<std::unique_ptr<LoopbackHttpServer>> server =
      LoopbackHttpServer::Start([](const LoopbackRequest&) { return LoopbackResponse{}; });
  ASSERT_TRUE(server.ok()) << server.status();
  const int fd = ConnectLoopback((*server)->port());
  const std::string bomb = "GET /x HTTP/1.1\r\nX-Pad: " + std::string(100 << 10, 'a') + "\r\n\r\n";
  (void)write(fd, bomb.data(), bomb.size());  // may stop short: the server stops reading
  std::string answer(512, '\0');
  const ssize_t n = read(fd, answer.data(), answer.size());
  close(fd);
  answer.resize(n > 0 ? static_cast<size_t>(n) : 0);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431 "));
  EXPECT_THAT(answer, HasSubstr("request head is over the limit of 65536 bytes"));

  const int ok = ConnectLoopback((*server)->port());
  const std::string request = "GET /y HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(write(ok, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string served(512, '\0');
  const ssize_t m = read(ok, served.data(), served.size());
  close(ok);
  served.resize(m > 0 ? static_cast<size_t>(m) : 0);
  EXPECT_THAT(served, StartsWith("HTTP/1.1 200 "));
  ASSERT_EQ((*server)->requests().size(), 1u);
  EXPECT_EQ((*server)->requests()[0].uri, "/y");
}

}  // namespace
}  // namespace hb::testing
