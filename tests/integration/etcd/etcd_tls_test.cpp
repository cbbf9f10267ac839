// etcds:// with v3 auth against the instance of scripts/etcd-tls.sh (https://127.0.0.1:12479,
// client certificates required, simple auth tokens that expire after 2 s). Skipped with a message
// when that instance is not running.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "etcd_test_util.hpp"

namespace leader::etcdtest {
namespace {

std::string certs() {
  return env_or("LEADER_TEST_ETCD_TLS_DIR", "/tmp/le-test/etcd-tls") + "/certs";
}
std::string tls_endpoint() { return env_or("LEADER_TEST_ETCD_TLS_ENDPOINT", "127.0.0.1:12479"); }

std::string tls_uri(const std::string& userinfo, bool with_ca = true, bool with_cert = true) {
  std::string u = "etcds://" + userinfo + (userinfo.empty() ? "" : "@") + tls_endpoint() +
                  "?prefix=/leader-tls&connect_timeout=2s";
  if (with_ca) u += "&cacert=" + certs() + "/ca.crt";
  if (with_cert) u += "&cert=" + certs() + "/client.crt&key=" + certs() + "/client.key";
  return u;
}

class EtcdTls : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string pidfile =
        env_or("LEADER_TEST_ETCD_TLS_PIDFILE", "/tmp/le-test/pids/etcd-tls.pid");
    std::ifstream in(pidfile);
    pid_t pid = 0;
    in >> pid;
    if (!std::filesystem::exists(certs() + "/client.crt") || pid <= 0 || ::kill(pid, 0) != 0)
      GTEST_SKIP() << "the TLS etcd is not running: scripts/etcd-tls.sh start";
  }
};

ErrorCode code_of(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const BackendError& e) {
    if (what) *what = e.what();
    return e.code();
  }
  ADD_FAILURE() << "no BackendError";
  return ErrorCode::internal;
}

TEST_F(EtcdTls, AnAuthenticatedClientAcquiresInspectsAndReleases) {
  auto s = open(tls_uri("leader:leaderpw"));
  auto name = unique("tls");
  auto got = s->try_acquire({name, new_owner_token(), "tls-node", Ms{3000}, 0}, soon());
  ASSERT_TRUE(got);
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "tls-node");
  Lease lease = *got.lease;
  EXPECT_EQ(s->renew(lease, Ms{3000}, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  LeaderElector e(s, {.wait_time = Ms{0}, .lease_time = Ms{2000}});
  EXPECT_EQ(e.run_if_leader(name, [] { return 7; }), 7);
}

TEST_F(EtcdTls, AnExpiredAuthTokenIsRenewedTransparently) {
  auto s = open(tls_uri("leader:leaderpw"));
  auto name = unique("tls-token");
  EXPECT_FALSE(s->inspect(name, soon()).held());
  std::this_thread::sleep_for(Ms{3500});  // the server's simple token ttl is 2 s
  EXPECT_FALSE(s->inspect(name, soon()).held());
  s->put_candidate(name, Candidate{"n1", {}, 0, 0, {}, {}}, Ms{5000}, soon());
  EXPECT_EQ(s->list_candidates(name, soon()).size(), 1u);
  s->remove_candidate(name, "n1", soon());
}

TEST_F(EtcdTls, AWrongPasswordIsAFailedPreconditionThatNeverShowsThePassword) {
  std::string what;
  auto s = open(tls_uri("leader:s3cr3t-wrong"));
  EXPECT_EQ(code_of([&] { (void)s->inspect("x", soon()); }, &what), ErrorCode::failed_precondition);
  EXPECT_EQ(what.find("s3cr3t-wrong"), std::string::npos) << what;
  EXPECT_NE(what.find("leader"), std::string::npos) << what;
}

TEST_F(EtcdTls, NoCredentialsAndForeignPrefixesAreFailedPreconditions) {
  auto anonymous = open(tls_uri(""));
  EXPECT_EQ(code_of([&] { (void)anonymous->inspect("x", soon()); }),
            ErrorCode::failed_precondition);
  auto outsider = open(tls_uri("outsider:outsiderpw"));
  EXPECT_EQ(code_of([&] {
              (void)outsider->try_acquire({"x", new_owner_token(), "n", Ms{1000}, 0}, soon());
            }),
            ErrorCode::failed_precondition);
}

TEST_F(EtcdTls, AnUntrustedServerOrAMissingClientCertificateFails) {
  std::string what;
  auto no_ca = open(tls_uri("leader:leaderpw", /*with_ca=*/false));
  EXPECT_EQ(code_of([&] { (void)no_ca->inspect("x", soon()); }, &what),
            ErrorCode::failed_precondition)
      << what;
  auto no_cert = open(tls_uri("leader:leaderpw", true, /*with_cert=*/false));
  EXPECT_NE(code_of([&] { (void)no_cert->inspect("x", soon()); }), ErrorCode::internal);
}

}  // namespace
}  // namespace leader::etcdtest
