// TLS (rediss://) and ACL users, against scripts/redis-tls.sh (TLS on 127.0.0.1:16380) and the
// shared plain server. The TLS cases skip when that server was not started, except in CI
// (CI=true) or with LEADER_TEST_REQUIRE_REDIS_TLS=1, where they fail.

#include <sys/stat.h>

#include <future>
#include <thread>

#include "leader/lock_watching.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

const std::string kPassword = "leader-test-password";

std::string tls_dir() { return env_or("LE_TEST_ROOT", "/tmp/le-test") + "/redis-tls"; }
std::string tls_port() { return env_or("LE_REDIS_TLS_PORT", "16380"); }

std::string tls_uri(const std::string& userinfo, const std::string& query) {
  return "rediss://" + userinfo + "127.0.0.1:" + tls_port() + "?" + query;
}

LeaseRequest request(const std::string& lock) {
  return LeaseRequest{lock, new_owner_token(), "tls-node", 5s, 0};
}

std::pair<ErrorCode, std::string> failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const BackendError& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "expected a BackendError";
  return {ErrorCode::internal, ""};
}

class RedisTls : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st {};
    if (::stat((tls_dir() + "/ca.crt").c_str(), &st) != 0) {
      if (env_or("LEADER_TEST_REQUIRE_REDIS_TLS", "0") == "1" || env_or("CI", "") == "true")
        GTEST_FAIL() << "no TLS redis: run scripts/redis-tls.sh start";
      GTEST_SKIP() << "no TLS redis (scripts/redis-tls.sh start)";
    }
    ca_ = "tls_ca=" + tls_dir() + "/ca.crt";
  }
  std::string ca_;
};

TEST_F(RedisTls, AcquireInspectReleaseOverTlsWithAnAclUser) {
  auto store = leader::open(tls_uri("leader-test:" + kPassword + "@", ca_));
  EXPECT_EQ(store->scheme(), "rediss");
  auto lock = unique_lock("tls");
  auto got = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(store->inspect(lock, soon()).holders.at(0).owner, got.lease->owner);
  Lease lease = *got.lease;
  EXPECT_EQ(store->renew(lease, 5s, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(store->release(lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_FALSE(store->inspect(lock, soon()).held());
}

TEST_F(RedisTls, HostNameCheckUsesTheServerName) {
  auto ok =
      leader::open(tls_uri("leader-test:" + kPassword + "@", ca_ + "&tls_server_name=localhost"));
  EXPECT_FALSE(ok->inspect(unique_lock("sni"), soon()).held());
  auto wrong = leader::open(
      tls_uri("leader-test:" + kPassword + "@", ca_ + "&tls_server_name=redis.example.org"));
  auto [code, what] = failure_of([&] { (void)wrong->inspect("x", soon()); });
  EXPECT_EQ(code, ErrorCode::failed_precondition) << what;
}

TEST_F(RedisTls, UnknownCaIsRefused) {
  auto store = leader::open(
      tls_uri("leader-test:" + kPassword + "@", "tls_ca=" + tls_dir() + "/other-ca.crt"));
  auto [code, what] = failure_of([&] { (void)store->inspect("x", soon()); });
  EXPECT_EQ(code, ErrorCode::failed_precondition) << what;
  EXPECT_EQ(what.find(kPassword), std::string::npos) << what;
}

TEST_F(RedisTls, WrongPasswordIsFailedPreconditionAndNeverPrinted) {
  auto store = leader::open(tls_uri("leader-test:Wr0ngPassw0rd@", ca_));
  auto [code, what] = failure_of([&] { (void)store->inspect("x", soon()); });
  EXPECT_EQ(code, ErrorCode::failed_precondition);
  EXPECT_EQ(what.find("Wr0ngPassw0rd"), std::string::npos) << what;
}

TEST_F(RedisTls, AclUserWithoutAccessToTheKeysIsFailedPrecondition) {
  auto store = leader::open(tls_uri("leader-noperm:" + kPassword + "@", ca_));
  auto [code, what] =
      failure_of([&] { (void)store->try_acquire(request(unique_lock("noperm")), soon()); });
  EXPECT_EQ(code, ErrorCode::failed_precondition) << what;
}

TEST_F(RedisTls, PlainClientAgainstTlsPortFailsCleanly) {
  auto store = leader::open("redis://127.0.0.1:" + tls_port() + "?connect_timeout=500ms");
  auto [code, what] = failure_of([&] { (void)store->inspect("x", Deadline::after(1s)); });
  EXPECT_TRUE(code == ErrorCode::unavailable || code == ErrorCode::deadline_exceeded) << what;
}

// The watch's own subscriber connection goes through TLS too (poll on the socket, OpenSSL
// reading session tickets and messages without blocking).
TEST_F(RedisTls, AWatchOverTlsReportsAnAcquireAndARelease) {
  auto store = leader::open(tls_uri("leader-test:" + kPassword + "@", ca_));
  LockWatcher* watcher = lock_watcher(*store);
  ASSERT_NE(watcher, nullptr);
  auto lock = unique_lock("tls-watch");
  const LockState free = store->inspect(lock, soon());
  auto acquired = std::async(std::launch::async, [&] {
    return watcher->watch(lock, free, Deadline::after(20s), std::stop_token{});
  });
  std::this_thread::sleep_for(300ms);  // subscribed by then (a change before is read anyway)
  auto got = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  ASSERT_EQ(acquired.wait_for(5s), std::future_status::ready);
  const LockState held = acquired.get();
  ASSERT_TRUE(held.held());
  auto released = std::async(std::launch::async, [&] {
    return watcher->watch(lock, held, Deadline::after(20s), std::stop_token{});
  });
  std::this_thread::sleep_for(300ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  ASSERT_EQ(released.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(released.get().held());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "heard by a message, not at expiry";
}

// ACL on the plain shared server: a user created here, limited to the store's keys.
TEST(RedisAcl, RestrictedUserOnThePlainServerCanElect) {
  auto db = admin();
  ASSERT_TRUE(db);
  auto r = run(db.get(),
               "ACL SETUSER leader-acl-it on >acl-it-pw resetkeys ~leader:* ~{leader:* "
               "&* +@all");
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  auto store = leader::open("redis://leader-acl-it:acl-it-pw@127.0.0.1:16379");
  auto got = store->try_acquire(request(unique_lock("acl")), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  auto other = leader::open("redis://leader-acl-it:acl-it-pw@127.0.0.1:16379?prefix=app:");
  auto [code, what] =
      failure_of([&] { (void)other->try_acquire(request(unique_lock("acl")), soon()); });
  EXPECT_EQ(code, ErrorCode::failed_precondition) << what;
  EXPECT_EQ(what.find("acl-it-pw"), std::string::npos) << what;
}

}  // namespace
}  // namespace leader::test
