#include "cli/server_flags.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hb::cli {
namespace {

using ::testing::HasSubstr;

// A socket listening on 127.0.0.1 at a port the kernel picked; closed on destruction.
class TakenPort {
 public:
  TakenPort() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

TEST(ServeMetricsTest, EmptyAddressServesNothing) {
  auto exposer = ServeMetrics("", std::make_shared<prometheus::Registry>());
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  EXPECT_EQ(*exposer, nullptr);
}

TEST(ServeMetricsTest, TakenPortFailsSayingHowToFix) {
  TakenPort taken;
  const std::string listen = absl::StrCat("127.0.0.1:", taken.port());
  auto exposer = ServeMetrics(listen, std::make_shared<prometheus::Registry>());
  ASSERT_FALSE(exposer.ok());
  EXPECT_EQ(exposer.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(exposer.status().message(), HasSubstr(listen));
  EXPECT_THAT(exposer.status().message(), HasSubstr("--metrics-listen="));
}

TEST(CheckServerFlagsTest, NegativeCapsAndEmptyDeadlinesNameTheFlag) {
  ServerFlags flags;
  EXPECT_TRUE(CheckServerFlags(flags).ok());
  flags.max_concurrent_rpcs = -1;
  EXPECT_THAT(CheckServerFlags(flags).message(), HasSubstr("--max-concurrent-rpcs"));
  flags.max_concurrent_rpcs = 0;  // no limit
  flags.default_deadline = absl::ZeroDuration();
  EXPECT_THAT(CheckServerFlags(flags).message(), HasSubstr("--default-deadline"));
  EXPECT_EQ(CheckServerFlags(flags).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hb::cli
