// leader::http::Client over TLS against http_double.py with throwaway certificates: CA file,
// mutual TLS, verification failures (failed_precondition, nothing sent), the server name
// override, and verify=false.

#include <gtest/gtest.h>

#include "http_test_util.hpp"

namespace leader::httptest {
namespace {

using http::Client;
using http::Method;

Deadline soon() { return Deadline::after(Ms{5000}); }

std::vector<std::string> server_args(bool require_client_cert) {
  const Certs& c = Certs::get();
  std::vector<std::string> args{"--cert", c.server_crt, "--key", c.server_key};
  if (require_client_cert) args.insert(args.end(), {"--client-ca", c.ca});
  return args;
}

http::ClientOptions tls_options(const Double& server, bool with_client_cert) {
  auto o = options({server.url(/*tls=*/true)});
  o.tls.ca_file = Certs::get().ca;
  if (with_client_cert) {
    o.tls.cert_file = Certs::get().client_crt;
    o.tls.key_file = Certs::get().client_key;
  }
  return o;
}

TEST(HttpTls, TheProjectCaVerifiesTheServerAndAClientCertificateIsAccepted) {
  Double server(server_args(/*require_client_cert=*/true));
  Client c(tls_options(server, true));
  for (int i = 0; i < 3; ++i) {
    auto r = c.send({Method::post, "/echo", {}, "over tls"}, soon());
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(echoed(r)["body"], "over tls");
  }
}

TEST(HttpTls, AnUntrustedServerIsAFailedPreconditionAndNothingIsSent) {
  Double server(server_args(false));
  auto o = tls_options(server, false);
  o.tls.ca_file = Certs::get().other_ca;
  Client c(o);
  std::string what;
  EXPECT_EQ(code_of(
                [&] {
                  (void)c.send({Method::post, "/echo", {}, "x"}, soon());
                },
                &what),
            ErrorCode::failed_precondition);
  EXPECT_NE(what.find("not sent"), std::string::npos) << what;
}

TEST(HttpTls, AMissingCaFileIsAFailedPrecondition) {
  Double server(server_args(false));
  auto o = tls_options(server, false);
  o.tls.ca_file = Certs::get().dir + "/no-such-ca.crt";
  Client c(o);
  EXPECT_EQ(code_of([&] {
              (void)c.send({Method::get, "/echo", {}, {}}, soon());
            }),
            ErrorCode::failed_precondition);
}

TEST(HttpTls, AMissingClientCertificateFailsWithATransportCode) {
  Double server(server_args(/*require_client_cert=*/true));
  Client c(tls_options(server, false));
  // TLS 1.3 sends the server's refusal after the client's Finished message, when the request may
  // already be on its way: either "not sent" (unavailable) or "possibly sent" is correct.
  const ErrorCode code = code_of([&] { (void)c.send({Method::get, "/echo", {}, {}}, soon()); });
  EXPECT_TRUE(code == ErrorCode::unavailable || code == ErrorCode::deadline_exceeded)
      << to_string(code);
}

TEST(HttpTls, TheServerNameReplacesTheHostForVerificationButNotForTheConnection) {
  Double server(server_args(false));
  auto o = tls_options(server, false);
  o.tls.server_name = "localhost";  // in the certificate's SAN; 127.0.0.1 is where it listens
  Client c(o);
  auto r = c.send({Method::get, "/echo", {}, {}}, soon());
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(echoed(r)["headers"]["host"], "localhost:" + std::to_string(server.port()));
  o.tls.server_name = "not-in-the-certificate.example";
  Client wrong(o);
  EXPECT_EQ(code_of([&] {
              (void)wrong.send({Method::get, "/echo", {}, {}}, soon());
            }),
            ErrorCode::failed_precondition);
}

TEST(HttpTls, VerifyOffAcceptsAnUntrustedServer) {
  Double server(server_args(false));
  auto o = options({server.url(true)});
  o.tls.verify = false;
  Client c(o);
  EXPECT_EQ(c.send({Method::get, "/echo", {}, {}}, soon()).status, 200);
}

TEST(HttpTls, PlainHttpToATlsServerIsNotAReply) {
  Double server(server_args(false));
  Client c(options({server.url(/*tls=*/false)}));
  const ErrorCode code = code_of([&] {
    (void)c.send({Method::get, "/echo", {}, {}}, Deadline::after(Ms{1000}));
  });
  EXPECT_TRUE(code == ErrorCode::unavailable || code == ErrorCode::deadline_exceeded)
      << to_string(code);
}

}  // namespace
}  // namespace leader::httptest
