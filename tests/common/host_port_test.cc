#include "common/base/host_port.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace hb {
namespace {

using ::hb::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(HostPortTest, ParsesIpv4NamesAndBracketedIpv6) {
  HB_ASSERT_OK_AND_ASSIGN(HostPort v4, ParseHostPort("127.0.0.1:8080"));
  EXPECT_EQ(v4.host, "127.0.0.1");
  EXPECT_EQ(v4.port, 8080);
  EXPECT_EQ(v4.ToString(), "127.0.0.1:8080");

  HB_ASSERT_OK_AND_ASSIGN(HostPort name, ParseHostPort("localhost:65535"));
  EXPECT_EQ(name.host, "localhost");
  EXPECT_EQ(name.port, 65535);

  HB_ASSERT_OK_AND_ASSIGN(HostPort v6, ParseHostPort("[::1]:1"));
  EXPECT_EQ(v6.host, "::1");
  EXPECT_TRUE(v6.bracketed);
  EXPECT_EQ(v6.port, 1);
  EXPECT_EQ(v6.DisplayHost(), "[::1]");
  EXPECT_EQ(v6.ToString(), "[::1]:1");
}

TEST(HostPortTest, ListenRulesTakePortZero) {
  EXPECT_THAT(ParseHostPort("127.0.0.1:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a number in 1..65535")));
  HB_ASSERT_OK_AND_ASSIGN(HostPort any, ParseHostPort("[::]:0", ListenRules("--listen")));
  EXPECT_EQ(any.host, "::");
  EXPECT_EQ(any.port, 0);
}

TEST(HostPortTest, DefaultPortAndEmptyHostOnlyWhenAllowed) {
  HostPortRules rules;
  rules.default_port = 6379;
  HB_ASSERT_OK_AND_ASSIGN(HostPort cache, ParseHostPort("cache", rules));
  EXPECT_EQ(cache.ToString(), "cache:6379");
  HB_ASSERT_OK_AND_ASSIGN(HostPort v6, ParseHostPort("[fe80::1]", rules));
  EXPECT_EQ(v6.ToString(), "[fe80::1]:6379");

  EXPECT_THAT(ParseHostPort(":8080"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("it has no host")));
  rules = ListenRules("--http-listen");
  rules.empty_host_ok = true;
  HB_ASSERT_OK_AND_ASSIGN(HostPort all, ParseHostPort(":8080", rules));
  EXPECT_EQ(all.host, "");
  EXPECT_EQ(all.port, 8080);
}

TEST(HostPortTest, ErrorsNameTheFlagTheValueWhatIsWrongAndAnExample) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "it is empty"},
      {"nocolon", "it has no port"},
      {"host:", "it has no port after ':'"},
      {"host:http", "the port is not a number in 0..65535"},
      {"host:+80", "the port is not a number in 0..65535"},
      {"host:65536", "the port is not a number in 0..65535"},
      {"host:99999999999", "the port is not a number in 0..65535"},
      {"::1:8080", "an IPv6 host goes in brackets"},
      {"[::1:8080", "'[' without ']'"},
      {"[::1]8080", "text after ']' is not ':PORT'"},
      {"[]:80", "it has no host"},
      {"a/b:80", "the host holds '/'"},
      {"a b:80", "the host holds ' '"},
  };
  for (const auto& [text, why] : refused) {
    EXPECT_THAT(ParseHostPort(text, ListenRules("--listen")),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("--listen must be host:port, got '" + text + "': " + why),
                               HasSubstr("e.g. 127.0.0.1:8080, [::1]:8080"))))
        << text;
  }
}

TEST(HostPortTest, HostPartKeepsBrackets) {
  EXPECT_EQ(HostPartOf("[::1]:0"), "[::1]");
  EXPECT_EQ(HostPartOf("127.0.0.1:9"), "127.0.0.1");
  EXPECT_EQ(HostPartOf("[::1]"), "[::1]");
  EXPECT_EQ(HostPartOf("nocolon"), "nocolon");
  EXPECT_EQ(BareHostOf("[::1]:0"), "::1");
  EXPECT_EQ(BareHostOf("[fe80::1]"), "fe80::1");
  EXPECT_EQ(BareHostOf("localhost:8080"), "localhost");
  EXPECT_EQ(BareHostOf(""), "");
}

}  // namespace
}  // namespace hb
