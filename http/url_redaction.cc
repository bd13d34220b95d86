#include "http/url_redaction.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace hb {
namespace {

constexpr char kRedacted[] = "[redacted]";

// The [begin, end) of the authority (after "scheme://", up to the path, query or fragment),
// or begin == end when there is no "://".
std::pair<size_t, size_t> Authority(absl::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) return {0, 0};
  const size_t begin = scheme_end + 3;
  size_t end = url.find_first_of("/?#", begin);
  if (end == absl::string_view::npos) end = url.size();
  return {begin, end};
}

bool IsCredentialName(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view word :
       {"key", "token", "secret", "password", "passwd", "sig", "auth", "credential"}) {
    if (absl::StrContains(lower, word)) return true;
  }
  return false;
}

std::string RedactQuery(absl::string_view query) {
  std::vector<std::string> params;
  for (absl::string_view param : absl::StrSplit(query, '&')) {
    const size_t eq = param.find('=');
    if (eq != absl::string_view::npos && IsCredentialName(param.substr(0, eq))) {
      params.push_back(absl::StrCat(param.substr(0, eq + 1), kRedacted));
    } else {
      params.emplace_back(param);
    }
  }
  return absl::StrJoin(params, "&");
}

}  // namespace

std::string RedactUrl(absl::string_view url) {
  const auto [begin, end] = Authority(url);
  std::string out;
  absl::string_view authority = url.substr(begin, end - begin);
  const size_t at = authority.rfind('@');
  if (begin != end && at != absl::string_view::npos) {
    absl::StrAppend(&out, url.substr(0, begin), kRedacted, authority.substr(at));
  } else {
    absl::StrAppend(&out, url.substr(0, end));
  }
  absl::string_view rest = url.substr(end);
  const size_t q = rest.find('?');
  if (q == absl::string_view::npos) return absl::StrCat(out, rest);
  absl::string_view query = rest.substr(q + 1);
  absl::string_view fragment;
  if (const size_t hash = query.find('#'); hash != absl::string_view::npos) {
    fragment = query.substr(hash);
    query = query.substr(0, hash);
  }
  return absl::StrCat(out, rest.substr(0, q + 1), RedactQuery(query), fragment);
}

bool UrlHasCredentials(absl::string_view url) { return RedactUrl(url) != url; }

std::string UrlHostPort(absl::string_view url) {
  const auto [begin, end] = Authority(url);
  absl::string_view authority = url.substr(begin, end - begin);
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    authority = authority.substr(at + 1);
  }
  return std::string(authority);
}

}  // namespace hb
