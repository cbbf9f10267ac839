// A key this process no longer claims must be gone from the server within the
// ttl of its last confirmed renewal, also when the process goes on renewing other keys of the
// same session lease. A userspace proxy in front of the test server swallows one call (the
// release, or an acquire's reply), so its outcome is unknown without touching the server; the
// same store object then keeps renewing another lock and trying others, as run_if_leader loops
// do. A second store object, straight on the server, judges when the lock is free again.

#include <gtest/gtest.h>

#include "clients/etcd/codec.hpp"
#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"
#include "fault_proxy.hpp"
#include "lost_release.hpp"

namespace leader::etcdtest {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using test::FaultProxy;

const std::string kPrefix = "/leader-lost-release";
constexpr Ms kTtl{2000};  // the test server's minimum lease TTL (1.5 x its 1 s election timeout)
// The server frees a key up to 1 s (TTL rounding) + 0.5 s (expiry scan) after its lease's TTL;
// the rest is room for a loaded machine. The old code never freed it while the holder worked.
constexpr Ms kSlack{2500};
constexpr Ms kGiveUp{10000};

std::unique_ptr<etcd::EtcdStore> store_on(const std::string& endpoint) {
  return std::make_unique<etcd::EtcdStore>(
      etcd::Config::from_uri(Uri::parse("etcd://" + endpoint + "?prefix=" + kPrefix)));
}

LeaseRequest request(const std::string& lock) {
  return {lock, new_owner_token(), "lost-release-node", kTtl, 0};
}

std::pair<std::string, int> host_port(const std::string& endpoint) {
  const auto colon = endpoint.rfind(':');
  return {endpoint.substr(0, colon), std::stoi(endpoint.substr(colon + 1))};
}

// Whether the server has a key under `lock`'s prefix, as a second client reads it.
bool any_key(etcd::EtcdStore& judge, const std::string& lock) {
  const std::string prefix = judge.lock_prefix(lock);
  Json r = judge.gateway().call("/v3/kv/range",
                                {{"key", etcd::base64_encode(prefix)},
                                 {"range_end", etcd::base64_encode(etcd::prefix_end(prefix))},
                                 {"count_only", true}},
                                soon());
  return etcd::int_field(r, "count") > 0;
}

// The lost-release case of `lock` while `holder` goes on holding `held` (the lock `kept`).
test::LostRelease lost_release(etcd::EtcdStore& holder, etcd::EtcdStore& judge,
                               const std::string& lock, const std::string& kept,
                               const Lease& held) {
  return {holder, judge, request, lock,    kept,
          held,   kTtl,  kSlack,  kGiveUp, unique("lost-release-other")};
}

TEST(EtcdLostRelease, AReleaseWhoseOutcomeIsUnknownFreesTheLockWithinTheTtlWhileTheHolderWorks) {
  const auto [host, port] = host_port(endpoint());
  FaultProxy proxy(host, port);
  auto holder = store_on(proxy.endpoint());
  auto judge = store_on(endpoint());
  const std::string lock = unique("lost-release");
  const std::string kept = unique("lost-release-kept");
  auto x = holder->try_acquire(request(lock), soon());
  auto y = holder->try_acquire(request(kept), soon());
  ASSERT_TRUE(x && y);
  // The last confirmed renewal of the lease about to be released.
  const auto renew_sent = Clock::now();
  ASSERT_EQ(holder->renew(*x.lease, kTtl, soon()).status, LeaseStatus::ok);
  proxy.set_mode(FaultProxy::Mode::blackhole);
  EXPECT_THROW((void)holder->release(*x.lease, Ms{0}, Deadline::after(Ms{500})), BackendError);
  proxy.set_mode(FaultProxy::Mode::forward);
  ASSERT_GT(proxy.dropped_requests(), 0U);
  ASSERT_TRUE(any_key(*judge, lock)) << "the release reached the server after all";

  test::expect_freed_within_ttl(lost_release(*holder, *judge, lock, kept, *y.lease), renew_sent);
  (void)holder->release(*y.lease, Ms{0}, soon());
}

TEST(EtcdLostRelease, AnAcquireWhoseReplyIsLostLeavesNoKeyBehindWhileTheHolderWorks) {
  const auto [host, port] = host_port(endpoint());
  FaultProxy proxy(host, port);
  auto holder = store_on(proxy.endpoint());
  auto judge = store_on(endpoint());
  const std::string kept = unique("lost-acquire-kept");
  auto y = holder->try_acquire(request(kept), soon());
  ASSERT_TRUE(y);
  std::string lock;
  Clock::time_point renew_sent;
  // The acquire's Txn must reach the server on the session the renewal just kept alive (a
  // session that needed a keep-alive first would lose that reply instead: tried again).
  for (int attempt = 0; attempt < 3 && lock.empty(); ++attempt) {
    const std::string name = unique("lost-acquire");
    renew_sent = Clock::now();
    ASSERT_EQ(holder->renew(*y.lease, kTtl, soon()).status, LeaseStatus::ok);
    proxy.set_mode(FaultProxy::Mode::drop_replies);
    EXPECT_THROW((void)holder->try_acquire(request(name), Deadline::after(Ms{500})), BackendError);
    proxy.set_mode(FaultProxy::Mode::forward);
    if (any_key(*judge, name)) lock = name;
  }
  ASSERT_FALSE(lock.empty()) << "no acquire reached the server with its reply lost";

  test::expect_freed_within_ttl(lost_release(*holder, *judge, lock, kept, *y.lease), renew_sent);
  (void)holder->release(*y.lease, Ms{0}, soon());
}

}  // namespace
}  // namespace leader::etcdtest
