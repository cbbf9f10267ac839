// Issue 17 (docs/campaign.md, the ZooKeeper liveness defect): an acquisition whose create the
// server applied but whose reply never came, on a session the call had to start anew because the
// old one had expired (a holder resumed from SIGSTOP, or back from a partition), left a "ghost"
// node on that live session. Nobody held it, yet once the lock's holder went it blocked every
// standby until that session ended. The store's own fault hooks make it deterministic: the
// session is expired on the server without the store replacing it, and the create's reply is
// dropped after the server applied it. A second client (the Observer) judges the takeover.

#include <gtest/gtest.h>

#include <iostream>

#include "clients/zookeeper/session.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/leader.hpp"
#include "observer.hpp"
#include "zk_raw.hpp"
#include "zk_store.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

constexpr Ms kLease{1000};  // = the session timeout below (the server's minimum)
constexpr Ms kRetry{250};   // one retry of a standby (leader run's attempt period: 250-500 ms)

LeaseRequest request(const std::string& lock, Ms ttl = kLease) {
  return {lock, new_owner_token(), "ghost-test", ttl, 0};
}

// The single-leader nodes of `lock` on the server, as another client lists them.
std::size_t contenders(const std::string& lock) {
  RawClient raw;
  return zookeeper::sorted_contenders(raw.children("/leader/" + lock)).size();
}

TEST(ZooKeeperGhost, AnUnknownCreateOnARenewedSessionDoesNotBlockTheNextHolder) {
  const auto name = unique("ghost");
  auto holder_store = open(uri("session_timeout=1s"));
  auto held = holder_store->try_acquire(request(name, Ms{30000}), soon());  // not renewed
  ASSERT_TRUE(held);

  auto store = open(uri("session_timeout=1s"));
  auto& zk = dynamic_cast<zookeeper::ZooKeeperStore&>(detail::unchecked(*store));
  ASSERT_TRUE(store->inspect(name, soon()).held());  // the session is up
  zk.base_session_for_test().expire_for_test(Deadline::after(Ms{10000}));
  zookeeper::fault_hooks().lose_create_replies = 1;
  LeaderElector standby(
      store, ElectionOptions{.wait_time = Ms{0}, .lease_time = kLease, .node_id = "ghost-standby"});
  bool ran = false;
  try {  // one attempt: the create lands on the new session, its reply is lost
    (void)standby.run_if_leader(name, [&](LeaderContext&) { ran = true; });
  } catch (const BackendError&) {
  }
  EXPECT_FALSE(ran);
  ASSERT_EQ(zookeeper::fault_hooks().lose_create_replies.load(), 0) << "no create was sent";
  const auto failed_at = std::chrono::steady_clock::now();
  // The ghost goes within the lease, as another client of the server sees it.
  const bool gone = eventually([&] { return contenders(name) == 1; }, Ms{3000});
  const auto ghost_for =
      std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now() - failed_at);
  std::cout << "ghost gone " << ghost_for.count() << " ms after the failed acquire" << std::endl;
  EXPECT_TRUE(gone) << "the ghost node stayed on the live session (" << contenders(name)
                    << " node(s) on the server)";
  EXPECT_LE(ghost_for, kLease);

  const auto released_at = std::chrono::steady_clock::now();
  ASSERT_EQ(holder_store->release(*held.lease, Ms{0}, soon()), LeaseStatus::ok);
  test::Observer observer(open(uri("session_timeout=1s")), name,
                          test::ObserverOptions{.ttl = kLease, .node_id = "ghost-observer"});
  const bool taken = observer.wait_for_takeover(Ms{5000});
  const std::size_t left = contenders(name);
  ASSERT_TRUE(taken) << "the lock stayed blocked (" << left << " node(s) left on the server)";
  const auto took = std::chrono::duration_cast<Ms>(*observer.takeover() - released_at);
  std::cout << "takeover " << took.count() << " ms after the holder's release" << std::endl;
  EXPECT_LE(took, kLease + kRetry);
  EXPECT_EQ(left, 1u) << "only the observer's node";
}

// The same renewed session when the reply does come: the lease is tracked on the session that
// created its node, so it renews (it was taken for one of the expired session, and lost at once).
TEST(ZooKeeperGhost, ALeaseTakenOnARenewedSessionRenews) {
  const auto name = unique("renewed");
  auto store = open(uri("session_timeout=1s"));
  auto& zk = dynamic_cast<zookeeper::ZooKeeperStore&>(detail::unchecked(*store));
  ASSERT_FALSE(store->inspect(name, soon()).held());  // the session is up
  zk.base_session_for_test().expire_for_test(Deadline::after(Ms{10000}));
  auto got = store->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(store->renew(*got.lease, kLease, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(store->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(contenders(name), 0u);
}

}  // namespace
}  // namespace leader::zktest
