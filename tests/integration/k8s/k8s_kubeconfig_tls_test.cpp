// kubeconfig end to end against the double over TLS (TestCa): a bearer-token user with the CA as a
// relative path, a client-certificate user with every PEM as base64 -data (libcurl blobs) or as
// paths, each acquiring and releasing a lease in the context's namespace; a wrong token refused
// as any refused token is (failed_precondition, 401, the token not shown).

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "k8s_double.hpp"
#include "leader/leader.hpp"

namespace leader::k8s::test {
namespace {

using Ms = std::chrono::milliseconds;
namespace fs = std::filesystem;

class K8sKubeconfig : public ::testing::Test {
 protected:
  K8sKubeconfig()
      : server_({"--tls-cert", ca_.file("server.crt"), "--tls-key", ca_.file("server.key"),
                 "--client-ca", ca_.file("ca.crt"), "--token", "good-token"}) {}
  /// A kubeconfig in the CA's folder with one context "it" in namespace `ns`.
  std::string kubeconfig(const std::string& cluster, const std::string& user,
                         const std::string& ns) {
    const fs::path path = ca_.dir / ("kubeconfig-" + ns);
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: it\n"
                        << "contexts:\n- name: it\n  context: {cluster: double, user: me, "
                        << "namespace: " << ns << "}\n"
                        << "clusters:\n- name: double\n  cluster:\n    server: https://127.0.0.1:"
                        << server_.port() << "\n"
                        << cluster << "users:\n- name: me\n  user:\n"
                        << user;
    return path.string();
  }
  /// Acquires and releases a lease through `uri`, then checks the object is in namespace `ns`.
  void acquire_and_release(const std::string& uri, const std::string& ns) {
    auto s = open(uri);
    auto got = s->try_acquire({"kubeconfig-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
    ASSERT_TRUE(got);
    EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    auto raw = std::make_shared<K8sStore>(Config::from_uri(Uri::parse(uri)));
    EXPECT_EQ(raw->api().get("kubeconfig-job", soon()).status, 200);
    EXPECT_EQ(raw->api().config().ns, ns);
  }
  TestCa ca_;
  Double server_;
};

TEST_F(K8sKubeconfig, ATokenUserWithARelativeCaPathAcquiresAndReleases) {
  const std::string file =
      kubeconfig("    certificate-authority: ca.crt\n", "    token: good-token\n", "tok-ns");
  acquire_and_release("k8s://?kubeconfig=" + file, "tok-ns");
}

TEST_F(K8sKubeconfig, AClientCertificateUserWithDataFieldsAcquiresAndReleases) {
  const std::string file =
      kubeconfig("    certificate-authority-data: " + base64(read_text(ca_.file("ca.crt"))) + "\n",
                 "    client-certificate-data: " + base64(read_text(ca_.file("client.crt"))) +
                     "\n    client-key-data: " + base64(read_text(ca_.file("client.key"))) + "\n",
                 "cert-ns");
  acquire_and_release("k8s://?kubeconfig=" + file, "cert-ns");
}

TEST_F(K8sKubeconfig, AClientCertificateUserWithPathsFromKubeconfigVariableAcquiresAndReleases) {
  const std::string file = kubeconfig("    certificate-authority: " + ca_.file("ca.crt") + "\n",
                                      "    client-certificate: client.crt\n"
                                      "    client-key: client.key\n",
                                      "path-ns");
  ScopedEnv env;
  env.set("KUBECONFIG", file);
  env.unset("KUBERNETES_SERVICE_HOST");
  acquire_and_release("k8s://", "path-ns");
}

TEST_F(K8sKubeconfig, AWrongTokenIsFailedPreconditionWithoutTheToken) {
  const std::string file = kubeconfig("    certificate-authority: ca.crt\n",
                                      "    token: wrong-kubeconfig-secret\n", "bad-ns");
  auto s = open("k8s://?kubeconfig=" + file);
  try {
    (void)s->try_acquire({"kubeconfig-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_NE(std::string(e.what()).find("401"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("wrong-kubeconfig-secret"), std::string::npos) << e.what();
  }
}

TEST_F(K8sKubeconfig, AServerCertificateFromAnotherCaIsRefused) {
  const std::string file = kubeconfig(
      "    certificate-authority-data: " + base64(read_text(ca_.file("other.crt"))) + "\n",
      "    token: good-token\n", "other-ns");
  auto s = open("k8s://?kubeconfig=" + file);
  try {
    (void)s->try_acquire({"kubeconfig-job", new_owner_token(), "n", Ms{5000}, 0}, soon());
    ADD_FAILURE() << "an unverified server was trusted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
  }
}

}  // namespace
}  // namespace leader::k8s::test
