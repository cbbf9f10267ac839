// renew_batch on ZooKeeper renews the held nodes of one session with one
// probe once each node's renewal watch is armed (src/clients/zookeeper/own_nodes.cpp), and stays
// exact per lease: a node deleted or changed from outside fires its watch and is read on its own,
// a reconnection makes every watch unverified (full per-node reads), a session expiry loses
// everything, a probe without a reply leaves every lease it covered unknown.

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "clients/zookeeper/session.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/leader.hpp"
#include "zk_raw.hpp"
#include "zk_store.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

constexpr std::size_t kLeases = 300;
constexpr Ms kTtl{20000};  // the timer deletes a node only at sent + ttl: not within a test

// kLeases single-leader leases of one store, all on its one session (a fixed session timeout).
struct Held {
  explicit Held(const std::string& query, std::size_t n = kLeases)
      : store(open(uri(query))),
        zk(dynamic_cast<zookeeper::ZooKeeperStore&>(detail::unchecked(*store))) {
    const std::string base = unique("renew");
    for (std::size_t i = 0; i < n; ++i) {
      const std::string lock = base + "-" + std::to_string(i);
      auto got = store->try_acquire({lock, new_owner_token(), "renew-test", kTtl, 0}, soon());
      if (!got.lease) throw std::runtime_error("not acquired: " + lock);
      leases.push_back(*got.lease);
      locks.push_back(lock);
    }
    RawClient raw;
    for (const auto& lock : locks) {
      auto kids = raw.children("/leader/" + lock);
      if (kids.size() != 1) throw std::runtime_error("not one node under " + lock);
      paths.push_back("/leader/" + lock + "/" + kids[0]);
    }
  }
  ~Held() {
    for (const auto& l : leases) try {
        (void)zk.release(l, Ms{0}, soon());
      } catch (const std::exception&) {
      }
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;

  zookeeper::Session& session() { return zk.base_session_for_test(); }

  // One renew_batch of the leases not in `skip`; the requests it sent on the session.
  std::vector<BatchRenewal> renew(std::uint64_t& sent, Deadline deadline = soon(),
                                  const std::vector<std::size_t>& skip = {}) {
    std::vector<RenewalRequest> requests;
    for (std::size_t i = 0; i < leases.size(); ++i)
      if (std::find(skip.begin(), skip.end(), i) == skip.end())
        requests.push_back({&leases[i], kTtl});
    const std::uint64_t before = session().renewal_requests();
    auto out = zk.renew_batch(requests, deadline);
    sent = session().renewal_requests() - before;
    return out;
  }

  std::shared_ptr<LeaseStore> store;
  zookeeper::ZooKeeperStore& zk;
  std::vector<Lease> leases;
  std::vector<std::string> locks;
  std::vector<std::string> paths;
};

std::size_t count_ok(const std::vector<BatchRenewal>& out) {
  return static_cast<std::size_t>(std::count_if(out.begin(), out.end(), [](const auto& r) {
    return !r.error && r.renewal.status == LeaseStatus::ok;
  }));
}

void expect_all_ok(const std::vector<BatchRenewal>& out, const char* when) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_FALSE(out[i].error) << when << ": lease " << i << ": " << out[i].error->what();
    EXPECT_EQ(out[i].renewal.status, LeaseStatus::ok) << when << ": lease " << i;
  }
}

TEST(ZooKeeperSessionRenew, OneProbePerSessionOnceTheWatchesAreArmed) {
  Held held("session_timeout=10s");
  std::uint64_t sent = 0;
  auto first = held.renew(sent);
  expect_all_ok(first, "first batch");
  EXPECT_EQ(sent, kLeases) << "the first batch reads each node once, arming its watch";
  EXPECT_EQ(held.session().renewal_watches_for_test(), kLeases);
  for (int round = 0; round < 3; ++round) {
    auto out = held.renew(sent);
    expect_all_ok(out, "armed batch");
    EXPECT_EQ(sent, 1U) << "round " << round << ": one probe for the whole session";
    for (const auto& r : out) EXPECT_EQ(r.renewal.ttl, Ms{10000}) << "min(ttl, session timeout)";
  }
  // A lease acquired since is read (and armed) on its own, next to the probe of the others.
  auto extra = held.store->try_acquire(
      {unique("renew-extra"), new_owner_token(), "renew-test", kTtl, 0}, soon());
  ASSERT_TRUE(extra.lease);
  held.leases.push_back(*extra.lease);
  auto mixed = held.renew(sent);
  expect_all_ok(mixed, "mixed batch");
  EXPECT_EQ(sent, 2U) << "one probe + one get of the new lease";
  (void)held.renew(sent);
  EXPECT_EQ(sent, 1U);
}

TEST(ZooKeeperSessionRenew, NodesDeletedFromOutsideAreLostAndOnlyThose) {
  Held held("session_timeout=10s");
  std::uint64_t sent = 0;
  expect_all_ok(held.renew(sent), "arming batch");
  const std::vector<std::size_t> deleted{3, 77, 150, 151, 299};
  {
    RawClient raw;  // another client: its deletes are applied before our next probe is sent
    for (std::size_t i : deleted) ASSERT_EQ(raw.remove(held.paths[i]), ZOK) << held.paths[i];
  }
  auto out = held.renew(sent);
  ASSERT_EQ(out.size(), kLeases);
  for (std::size_t i = 0; i < kLeases; ++i) {
    const bool gone = std::find(deleted.begin(), deleted.end(), i) != deleted.end();
    EXPECT_FALSE(out[i].error) << i;
    EXPECT_EQ(out[i].renewal.status, gone ? LeaseStatus::lost : LeaseStatus::ok) << "lease " << i;
  }
  EXPECT_EQ(sent, 1U + deleted.size()) << "one probe, then each fired watch's node read alone";
  for (int round = 0; round < 2; ++round) {
    out = held.renew(sent, soon(), deleted);
    EXPECT_EQ(count_ok(out), kLeases - deleted.size());
    EXPECT_EQ(sent, 1U);
  }
  // The deleted nodes' watches fired and are forgotten: none left behind for them.
  EXPECT_TRUE(eventually(
      [&] { return held.session().renewal_watches_for_test() == kLeases - deleted.size(); },
      Ms{2000}))
      << held.session().renewal_watches_for_test();
}

TEST(ZooKeeperSessionRenew, DataChangedFromOutsideIsCheckedAgainAndStaysOk) {
  Held held("session_timeout=10s", 20);
  std::uint64_t sent = 0;
  expect_all_ok(held.renew(sent), "arming batch");
  {
    RawClient raw;
    ASSERT_EQ(raw.set(held.paths[7], R"({"owner":"someone else"})"), ZOK);
  }
  auto out = held.renew(sent);
  expect_all_ok(out, "after setData");  // still our node: same czxid, our session's
  EXPECT_EQ(sent, 2U) << "one probe + a get of the changed node (re-arming its watch)";
  out = held.renew(sent);
  expect_all_ok(out, "after re-arming");
  EXPECT_EQ(sent, 1U);
}

TEST(ZooKeeperSessionRenew, AReconnectionFallsBackToReadingEveryNode) {
  // Session timeout 4 s: the C client gives the connection up after 2/3 of it without a reply
  // (2.7 s); a 3.3 s pause of the server disconnects and reconnects the session without expiry.
  Held held("session_timeout=4s", 50);
  std::uint64_t sent = 0;
  expect_all_ok(held.renew(sent), "arming batch");
  expect_all_ok(held.renew(sent), "armed batch");
  ASSERT_EQ(sent, 1U);
  const std::int64_t id = held.session().session_id();
  {
    ServerPause pause;
    ASSERT_TRUE(eventually([&] { return !held.session().connected(); }, Ms{3300}))
        << "the client did not notice the paused server";
  }
  ASSERT_TRUE(eventually([&] { return held.session().connected(); }, Ms{5000}));
  ASSERT_EQ(held.session().session_id(), id) << "the session expired: the pause was too long";
  auto out = held.renew(sent);
  expect_all_ok(out, "after the reconnection");
  EXPECT_EQ(sent, 50U) << "every watch armed before the reconnection is unverified";
  out = held.renew(sent);
  expect_all_ok(out, "re-armed");
  EXPECT_EQ(sent, 1U);
}

TEST(ZooKeeperSessionRenew, AProbeWithoutAReplyLeavesItsLeasesUnknown) {
  Held held("session_timeout=10s", 30);
  std::uint64_t sent = 0;
  expect_all_ok(held.renew(sent), "arming batch");
  {
    ServerPause pause;  // shorter than the client's 6.7 s: no disconnection
    auto out = held.renew(sent, Deadline::after(Ms{300}));
    EXPECT_EQ(sent, 1U);
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_TRUE(out[i].error) << "lease " << i << " decided without a reply";
      EXPECT_EQ(out[i].error->code(), ErrorCode::deadline_exceeded);
    }
  }
  auto out = held.renew(sent);
  expect_all_ok(out, "after the pause");
  EXPECT_EQ(sent, 1U) << "the connection stayed: the watches are still verified";
}

TEST(ZooKeeperSessionRenew, ASessionExpiredFromOutsideLosesEveryLease) {
  Held held("session_timeout=10s", 40);
  std::uint64_t sent = 0;
  expect_all_ok(held.renew(sent), "arming batch");
  held.session().expire_for_test(Deadline::after(Ms{10000}));
  auto out = held.renew(sent);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_FALSE(out[i].error) << i;
    EXPECT_EQ(out[i].renewal.status, LeaseStatus::lost) << "lease " << i;
  }
  EXPECT_EQ(sent, 0U) << "that session is gone: nothing to ask";
}

TEST(ZooKeeperSessionRenew, ReleasedLeasesLeaveNoWatchBehind) {
  auto held = std::make_unique<Held>("session_timeout=10s", 25);
  std::uint64_t sent = 0;
  expect_all_ok(held->renew(sent), "arming batch");
  auto& session = held->session();
  auto store = held->store;  // keeps the session open after the releases
  ASSERT_EQ(session.renewal_watches_for_test(), 25U);
  held.reset();  // releases every lease: each delete fires its node's watch, which is dropped
  EXPECT_TRUE(eventually([&] { return session.renewal_watches_for_test() == 0; }, Ms{2000}))
      << session.renewal_watches_for_test() << " watches left";
}

}  // namespace
}  // namespace leader::zktest
