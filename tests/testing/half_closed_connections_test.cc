// HalfClosedConnections counts the server side of connections the client closed until the
// server closes them too.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/loopback.h"
#include "tests/testing/poll_until.h"

namespace hb::testing {
namespace {

TEST(HalfClosedConnectionsTest, CountsUntilTheServerClosesItsSide) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);

  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int server = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  EXPECT_EQ(HalfClosedConnections(port), 0);  // both sides open
  ::close(client);
  // Poll a socket's state (the FIN's arrival), not a timing guess.
  PollUntil([&] { return HalfClosedConnections(port) > 0; }, absl::Seconds(10),
            absl::Milliseconds(1));
  EXPECT_EQ(HalfClosedConnections(port), 1);
  ::close(server);
  EXPECT_EQ(HalfClosedConnections(port), 0);
  ::close(listener);
}

}  // namespace
}  // namespace hb::testing
