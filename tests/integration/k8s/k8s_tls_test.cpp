// TLS and the in-cluster configuration end to end: the double serves https with a throwaway CA
// (TestCa, openssl CLI), the store verifies it with tls_ca, and `k8s://` (no host) reaches it
// from KUBERNETES_SERVICE_HOST/PORT with the token, CA and namespace of a service-account
// directory.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "k8s_double.hpp"
#include "leader/leader.hpp"

namespace leader::k8s::test {
namespace {

using Ms = std::chrono::milliseconds;
namespace fs = std::filesystem;

class K8sTls : public ::testing::Test {
 protected:
  K8sTls()
      : server_({"--tls-cert", ca_.file("server.crt"), "--tls-key", ca_.file("server.key"),
                 "--token", "sa-token"}) {}
  std::string https(const std::string& query) const {
    return "k8s://127.0.0.1:" + std::to_string(server_.port()) + "?" + query;
  }
  TestCa ca_;
  Double server_;
};

TEST_F(K8sTls, TheStoreVerifiesTheServerWithTheGivenCaAndSendsTheToken) {
  auto s = open(https("namespace=tls&tls_ca=" + ca_.file("ca.crt") + "&token=sa-token"));
  auto got = s->try_acquire({"tls-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_F(K8sTls, AServerCertificateFromAnotherCaIsFailedPrecondition) {
  auto s = open(https("namespace=tls&tls_ca=" + ca_.file("other.crt") + "&token=sa-token"));
  try {
    (void)s->try_acquire({"tls-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
    ADD_FAILURE() << "an unverified server was trusted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
  }
}

TEST_F(K8sTls, InClusterConfigurationReachesTheServerWithTheServiceAccountFiles) {
  const fs::path sa = ca_.dir / "serviceaccount";
  fs::create_directories(sa);
  std::ofstream(sa / "token") << "sa-token\n";
  fs::copy_file(ca_.file("ca.crt"), sa / "ca.crt");
  std::ofstream(sa / "namespace") << "pod-ns\n";
  ::setenv("LEADER_K8S_SERVICEACCOUNT_DIR", sa.c_str(), 1);
  ::setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(server_.port()).c_str(), 1);
  auto s = open("k8s://");
  auto got = s->try_acquire({"in-cluster-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
  for (const char* v :
       {"LEADER_K8S_SERVICEACCOUNT_DIR", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"})
    ::unsetenv(v);
  ASSERT_TRUE(got);
  // It landed in the pod's namespace, read from the namespace file.
  auto raw = std::make_shared<K8sStore>(Config::from_uri(
      Uri::parse(https("namespace=pod-ns&token=sa-token&tls_ca=" + ca_.file("ca.crt")))));
  EXPECT_EQ(raw->api().get("in-cluster-job", soon()).status, 200);
}

}  // namespace
}  // namespace leader::k8s::test
