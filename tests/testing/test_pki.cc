#include "tests/testing/test_pki.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/testing/shared_data.h"

namespace hb::testing {
namespace {

absl::Status Run(const std::string& command) {
  int rc = std::system(absl::StrCat(command, " >/dev/null 2>&1").c_str());
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` exited with ", rc));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TestPki> MakeTestPki() {
  TestPki pki;
  pki.dir = MakeTempDir();  // removed when the test binary exits
  const std::string& d = pki.dir;
  pki.ca_cert = d + "/ca.pem";
  pki.other_ca_cert = d + "/other-ca.pem";
  pki.server_cert = d + "/server.pem";
  pki.server_key = d + "/server.key";
  pki.client_cert = d + "/client.pem";
  pki.client_key = d + "/client.key";
  const std::string ca =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "
      "/CN=";
  for (const std::string& step : {
           ca + "hb-test-ca -keyout " + d + "/ca.key -out " + pki.ca_cert,
           ca + "hb-other-ca -keyout " + d + "/other-ca.key -out " + pki.other_ca_cert,
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "
           "/CN=localhost -keyout " +
               pki.server_key + " -out " + d + "/server.csr",
           "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > " + d + "/san.ext",
           "openssl x509 -req -days 2 -in " + d + "/server.csr -CA " + pki.ca_cert + " -CAkey " +
               d + "/ca.key -CAcreateserial -extfile " + d + "/san.ext -out " + pki.server_cert,
           "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "
           "/CN=hb-test-client -keyout " +
               pki.client_key + " -out " + d + "/client.csr",
           "openssl x509 -req -days 2 -in " + d + "/client.csr -CA " + pki.ca_cert + " -CAkey " +
               d + "/ca.key -CAcreateserial -out " + pki.client_cert,
       }) {
    if (absl::Status s = Run(step); !s.ok()) return s;
  }
  return pki;
}

}  // namespace hb::testing
