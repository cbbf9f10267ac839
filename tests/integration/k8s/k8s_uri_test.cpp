// k8s:// URI parsing, in-cluster configuration from the service-account files, and the object
// naming rules (no server needed).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "k8s/config.hpp"
#include "k8s/record.hpp"
#include "leader/leader.hpp"

namespace leader::k8s {
namespace {

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

std::string rejection(const std::string& text) {
  try {
    (void)parse(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(K8sUri, HostPortNamespaceAndTlsDefaults) {
  Config c = parse("k8s://api.example:6443?namespace=jobs");
  EXPECT_EQ(c.base_url, "https://api.example:6443");
  EXPECT_EQ(c.ns, "jobs");
  EXPECT_FALSE(c.in_cluster);
  EXPECT_EQ(parse("k8s://h").base_url, "https://h:443");
  EXPECT_EQ(parse("k8s://h?tls=false").base_url, "http://h:80");
  EXPECT_EQ(parse("k8s://[::1]:1").base_url, "https://[::1]:1");
  EXPECT_EQ(parse("k8s://h").ns, "default");
}

TEST(K8sUri, TokenTlsAndPoolOptionsAreParsed) {
  Config c = parse(
      "k8s://h:1?token_file=/t&tls_ca=/ca&tls_cert=/c&tls_key=/k&tls_server_name=api&"
      "tls_verify=false&pool_size=3&connect_timeout=250ms&timeout=2s");
  EXPECT_EQ(c.token_file, "/t");
  EXPECT_EQ(c.ca_file, "/ca");
  EXPECT_EQ(c.cert_file, "/c");
  EXPECT_EQ(c.key_file, "/k");
  EXPECT_EQ(c.tls_server_name, "api");
  EXPECT_FALSE(c.tls_verify);
  EXPECT_EQ(c.pool_size, 3);
  EXPECT_EQ(c.connect_timeout, Duration{250});
  EXPECT_EQ(c.request_timeout, Duration{2000});
  EXPECT_EQ(parse("k8s://h?token=abc").token, "abc");
}

TEST(K8sUri, BadUrisNameTheValueAndTheRuleWithoutTheToken) {
  EXPECT_NE(rejection("k8s://h?bogus=1").find("bogus"), std::string::npos);
  EXPECT_NE(rejection("k8s://h/x").find("namespace"), std::string::npos);
  EXPECT_NE(rejection("k8s://h?namespace=Bad_NS").find("DNS-1123"), std::string::npos);
  EXPECT_NE(rejection("k8s://h?tls=false&tls_ca=/c").find("TLS"), std::string::npos);
  EXPECT_NE(rejection("k8s://h?tls_cert=/c").find("both"), std::string::npos);
  EXPECT_NE(rejection("k8s://h?pool_size=0").find("pool_size"), std::string::npos);
  EXPECT_NE(rejection("k8s://a,b").find("several"), std::string::npos);
  EXPECT_NE(rejection("k8s://u:p@h").find("token_file"), std::string::npos);
  EXPECT_NE(rejection("k8s://h?token=a&token_file=/b").find("both"), std::string::npos);
  const std::string msg = rejection("k8s://h?token=hunter2&bogus=1");
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

class InCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("leader-k8s-sa-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "token") << "sa-token\n";
    std::ofstream(dir_ / "ca.crt") << "not really a certificate\n";
    std::ofstream(dir_ / "namespace") << "team-a\n";
    ::setenv("LEADER_K8S_SERVICEACCOUNT_DIR", dir_.c_str(), 1);
    ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    ::unsetenv("POD_NAMESPACE");
  }
  void TearDown() override {
    for (const char* v : {"LEADER_K8S_SERVICEACCOUNT_DIR", "KUBERNETES_SERVICE_HOST",
                          "KUBERNETES_SERVICE_PORT", "POD_NAMESPACE"})
      ::unsetenv(v);
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(InCluster, ConfigComesFromTheServiceAccountFilesAndEnvironment) {
  Config c = parse("k8s://");
  EXPECT_TRUE(c.in_cluster);
  EXPECT_EQ(c.base_url, "https://10.96.0.1:443");
  EXPECT_EQ(c.token_file, (dir_ / "token").string());
  EXPECT_EQ(c.ca_file, (dir_ / "ca.crt").string());
  EXPECT_EQ(c.ns, "team-a");
  ::setenv("POD_NAMESPACE", "from-env", 1);
  EXPECT_EQ(parse("k8s://").ns, "from-env");
  EXPECT_EQ(parse("k8s://?namespace=explicit").ns, "explicit");
  EXPECT_NE(rejection("k8s://?tls=false").find("TLS"), std::string::npos);
  ::setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
  EXPECT_EQ(parse("k8s://").base_url, "https://[fd00::1]:443");
}

TEST_F(InCluster, OutsideAPodTheErrorSaysWhatIsMissing) {
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  try {
    (void)parse("k8s://");
    ADD_FAILURE() << "accepted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_NE(std::string(e.what()).find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  }
}

TEST(K8sNames, DnsNamesAreUsedAsTheyAreOthersAreEncodedWithAHash) {
  EXPECT_EQ(object_name("nightly-settlement"), "nightly-settlement");
  EXPECT_EQ(object_name("a.b-c"), "a.b-c");
  const std::string enc = object_name("tenant:Acme:Job_1");
  EXPECT_EQ(enc, "tenant-acme-job-1-" + short_hash("tenant:Acme:Job_1"));
  EXPECT_TRUE(is_dns_subdomain(enc));
  EXPECT_NE(object_name("Job"), object_name("job"));
  const std::string long_name(255, 'a');
  EXPECT_LE(object_name(long_name).size(), 253u);
  EXPECT_LE(slot_object_name(std::string(253, 'b'), 99).size(), 253u);
  EXPECT_EQ(slot_object_name("jobs", 2), "jobs-slot2");
  for (const char* bad : {"", "-a", "a-", "a..b", "a.-b", "A", "a_b"})
    EXPECT_FALSE(is_dns_subdomain(bad)) << bad;
}

TEST(K8sWireFormat, MicroTimeHasSixDigitsAndZAndRoundTrips) {
  const WallTime t = WallTime(std::chrono::seconds(1740824130)) + std::chrono::microseconds(123456);
  EXPECT_EQ(micro_time(t), "2025-03-01T10:15:30.123456Z");
  EXPECT_EQ(*parse_micro_time("2025-03-01T10:15:30.123456Z"), t);
  EXPECT_EQ(micro_time(WallTime(std::chrono::seconds(1740824130))), "2025-03-01T10:15:30.000000Z");
  EXPECT_FALSE(parse_micro_time("2025-03-01 10:15:30Z"));
  EXPECT_FALSE(parse_micro_time("2025-03-01T10:15:30.1+01:00"));
}

TEST(K8sWireFormat, HolderIdentityIsNodeUnderscoreOwnerAndForeignIdentitiesHaveNoOwner) {
  const std::string owner(32, 'f');
  EXPECT_EQ(holder_identity("host:1", owner), "host:1_" + owner);
  EXPECT_EQ(split_identity("host_x:1_" + owner), std::make_pair(std::string("host_x:1"), owner));
  EXPECT_EQ(split_identity("kube-controller-manager-node1"),
            std::make_pair(std::string("kube-controller-manager-node1"), std::string()));
  EXPECT_EQ(split_identity("n_" + std::string(32, 'g')).second, "");
  EXPECT_EQ(duration_seconds(Duration{1}), 1);
  EXPECT_EQ(duration_seconds(Duration{1000}), 1);
  EXPECT_EQ(duration_seconds(Duration{1001}), 2);
  EXPECT_EQ(duration_seconds(Duration{15000}), 15);
  EXPECT_EQ(lease_seconds(Duration{1000}), 1);  // a grant rounds down: never more than asked
  EXPECT_EQ(lease_seconds(Duration{1999}), 1);
  EXPECT_EQ(lease_seconds(Duration{15000}), 15);
  EXPECT_THROW((void)lease_seconds(Duration{999}), BackendError);
}

}  // namespace
}  // namespace leader::k8s
