#include "http/url_redaction.h"

#include "gtest/gtest.h"

namespace hb {
namespace {

TEST(RedactUrlTest, UserPartIsRedacted) {
  EXPECT_EQ(RedactUrl("https://alice:s3cret@api.example.com:8443/v1"),
            "https://[redacted]@api.example.com:8443/v1");
  EXPECT_EQ(RedactUrl("http://token@127.0.0.1:8000/v1"), "http://[redacted]@127.0.0.1:8000/v1");
  // An '@' in the path is not a user part.
  EXPECT_EQ(RedactUrl("https://host/v1/@models"), "https://host/v1/@models");
}

TEST(RedactUrlTest, CredentialQueryValuesAreRedactedOthersKept) {
  EXPECT_EQ(RedactUrl("https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=abc"),
            "https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=[redacted]");
  EXPECT_EQ(RedactUrl("https://h/v1?key=abc&SIG=def&access_token=g#frag"),
            "https://h/v1?key=[redacted]&SIG=[redacted]&access_token=[redacted]#frag");
  EXPECT_EQ(RedactUrl("https://u:p@h/v1?Password=x"),
            "https://[redacted]@h/v1?Password=[redacted]");
}

TEST(RedactUrlTest, CleanUrlsAreUnchanged) {
  for (const char* url : {"https://api.openai.com/v1", "http://127.0.0.1:8000/v1?x=1", "",
                          "not a url", "http://[::1]:9/v1"}) {
    EXPECT_EQ(RedactUrl(url), url);
    EXPECT_FALSE(UrlHasCredentials(url)) << url;
  }
  EXPECT_TRUE(UrlHasCredentials("https://u:p@h/v1"));
  EXPECT_TRUE(UrlHasCredentials("https://h/v1?apikey=1"));
}

TEST(UrlHostPortTest, DropsUserPartAndPath) {
  EXPECT_EQ(UrlHostPort("https://u:p@api.example.com:8443/v1?k=1"), "api.example.com:8443");
  EXPECT_EQ(UrlHostPort("http://[::1]:8000/v1"), "[::1]:8000");
  EXPECT_EQ(UrlHostPort("https://api.openai.com"), "api.openai.com");
  EXPECT_EQ(UrlHostPort("no scheme"), "");
}

}  // namespace
}  // namespace hb
