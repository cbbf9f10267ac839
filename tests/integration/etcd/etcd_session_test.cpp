// Session leases (issue 14 target 2): one etcd lease per ttl per store object, shared by every
// key acquired with that ttl, so an uncontended election is one Txn to acquire and one to
// release. Judged by the server: the keys' `lease` field, its raft and lease-grant counters, and
// a second client that tries to take over.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"

namespace leader::etcdtest {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kPrefix = "/leader-session";

std::unique_ptr<etcd::EtcdStore> direct() {
  return std::make_unique<etcd::EtcdStore>(etcd::Config::from_uri(Uri::parse(uri(kPrefix))));
}

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), "session-node", ttl, slots};
}

std::string key_of(etcd::EtcdStore& s, const Lease& l) {
  return s.lock_prefix(l.lock) + (l.slots >= 1
                                      ? "slot-" + std::to_string(l.slot)
                                      : etcd::lease_hex(etcd::lease_id_for_owner(l.owner)));
}

// The lease id the server has `key` attached to (0: no lease; -1: no key).
std::int64_t attached_lease(etcd::EtcdStore& s, const std::string& key) {
  Json r = s.gateway().call("/v3/kv/range", {{"key", etcd::base64_encode(key)}}, soon());
  auto kvs = r.find("kvs");
  if (kvs == r.end() || !kvs->is_array() || kvs->empty()) return -1;
  return etcd::int_field((*kvs)[0], "lease");
}

// One counter of the test server's /metrics (Prometheus text), or -1.
double server_metric(const std::string& name) {
  const std::string cmd = "curl -s --max-time 5 http://" + endpoint() + "/metrics";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  ::pclose(p);
  const std::string line = "\n" + name + " ";
  const auto at = text.find(line);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + line.size(), 40));
}

// Polls with another store object until the server lets it in; the instant of that success.
Clock::time_point first_takeover(const std::string& lock, Ms timeout) {
  auto observer = direct();
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    auto got = observer->try_acquire(request(lock, Ms{2000}), soon());
    if (got) {
      const auto at = Clock::now();
      (void)observer->release(*got.lease, Ms{0}, soon());
      return at;
    }
    std::this_thread::sleep_for(Ms{20});
  }
  return Clock::time_point::max();
}

TEST(EtcdSession, LocksOfOneTtlShareOneLeaseAndAnElectionIsOneTxnEachWay) {
  auto s = direct();
  auto a = s->try_acquire(request(unique("share-a"), Ms{5000}), soon());
  auto b = s->try_acquire(request(unique("share-b"), Ms{5000}), soon());
  auto c = s->try_acquire(request(unique("share-c"), Ms{7000}, 2), soon());
  ASSERT_TRUE(a && b && c);
  const std::int64_t five = s->session_lease(5);
  ASSERT_NE(five, 0);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *a.lease)), five);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *b.lease)), five);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *c.lease)), s->session_lease(7));
  EXPECT_NE(s->session_lease(7), five);  // per-lock ttl: one session per ttl
  for (const auto* l : {&a, &b, &c})
    EXPECT_EQ(s->release(*l->lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *a.lease)), -1);

  // 20 uncontended elections through the elector: no lease grant, two raft writes each.
  const double grants = server_metric("etcd_debugging_lease_granted_total");
  const double writes = server_metric("etcd_server_proposals_applied_total");
  ASSERT_GE(grants, 0);
  ASSERT_GE(writes, 0);
  std::shared_ptr<LeaseStore> shared(s.release());
  LeaderElector e(shared, {.wait_time = Ms{0}, .lease_time = Ms{5000}});
  constexpr int kRuns = 20;
  for (int i = 0; i < kRuns; ++i) EXPECT_TRUE(e.run_if_leader(unique("elect"), [] {}));
  const double grants_after = server_metric("etcd_debugging_lease_granted_total");
  const double writes_after = server_metric("etcd_server_proposals_applied_total");
  std::cout << kRuns << " elections: " << grants_after - grants << " lease grants, "
            << writes_after - writes << " raft writes\n";
  EXPECT_EQ(grants_after - grants, 0);
  EXPECT_GE(writes_after - writes, 2 * kRuns);
  EXPECT_LE(writes_after - writes, 2 * kRuns + 2);  // (another client of the shared server)
  EXPECT_TRUE(shared->renew_batch({}, soon()).empty());
}

// A session last refreshed long ago: the acquire reports no more than the session still covers,
// or refreshes it first; either way no other client gets in before (acquire sent + reported ttl).
TEST(EtcdSession, TheReportedTtlIsBoundedByTheSessionAndHeldOnTheServer) {
  struct Case {
    Ms ttl;
    Ms idle;
    bool refreshed;  // idle cuts more than a tenth: the session is kept alive before the Txn
  };
  for (const Case& k : {Case{Ms{10000}, Ms{600}, false}, Case{Ms{3000}, Ms{1500}, true}}) {
    SCOPED_TRACE("ttl " + std::to_string(k.ttl.count()) + " ms, idle " +
                 std::to_string(k.idle.count()) + " ms");
    auto s = direct();
    auto first = s->try_acquire(request(unique("bound-first"), k.ttl), soon());
    ASSERT_TRUE(first);
    ASSERT_EQ(s->release(*first.lease, Ms{0}, soon()), LeaseStatus::ok);
    std::this_thread::sleep_for(k.idle);  // nothing keeps the session alive meanwhile
    auto name = unique("bound");
    const auto sent = Clock::now();
    auto got = s->try_acquire(request(name, k.ttl), soon());
    ASSERT_TRUE(got);
    const Duration reported = got.lease->ttl;
    if (k.refreshed) {
      EXPECT_GE(reported, k.ttl - k.ttl / 10);
    } else {
      EXPECT_LE(reported, k.ttl - k.idle + Ms{5});
      EXPECT_GE(reported, k.ttl - k.idle - Ms{500});
    }
    const auto taken = first_takeover(name, k.ttl + Ms{5000});
    ASSERT_NE(taken, Clock::time_point::max());
    std::cout << "reported " << reported.count() << " ms of " << k.ttl.count()
              << " ms; another store got in "
              << std::chrono::duration_cast<Ms>(taken - sent).count() << " ms after the send\n";
    EXPECT_GE(taken - sent, reported) << "the server let another owner in before the reported ttl";
    EXPECT_LE(taken - sent, k.ttl + Ms{2500});
  }
}

// A session revoked from outside: the next renew_batch reports exactly its leases lost (a lease
// on another session stays ok), and the next acquire works on a new session.
TEST(EtcdSession, ARevokedSessionLosesExactlyItsLeasesAndTheNextAcquireGetsANewOne) {
  auto s = direct();
  std::vector<Lease> leases;
  for (int i = 0; i < 4; ++i) {
    auto got = s->try_acquire(request(unique("revoked-" + std::to_string(i)),
                                      i == 3 ? Ms{6000} : Ms{5000}, i == 1 ? 3 : 0),
                              soon());
    ASSERT_TRUE(got) << i;
    leases.push_back(*got.lease);
  }
  const std::int64_t five = s->session_lease(5);
  ASSERT_NE(five, 0);
  ASSERT_EQ(run({"etcdctl", "--endpoints=http://" + endpoint(), "lease", "revoke",
                 etcd::lease_hex(five)}),
            0);
  std::vector<RenewalRequest> batch;
  for (const Lease& l : leases) batch.push_back({&l, l.ttl > Ms{5000} ? Ms{6000} : Ms{5000}});
  auto out = s->renew_batch(batch, soon());
  ASSERT_EQ(out.size(), 4u);
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].error) << i << ": " << out[i].error->what();
    EXPECT_EQ(out[i].renewal.status, i == 3 ? LeaseStatus::ok : LeaseStatus::lost) << i;
  }
  EXPECT_EQ(s->session_lease(5), 0) << "the revoked session was kept";
  auto again = s->try_acquire(request(leases[0].lock, Ms{5000}), soon());
  ASSERT_TRUE(again);
  EXPECT_NE(s->session_lease(5), five);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *again.lease)), s->session_lease(5));

  // Revoked again, unknown to the store: its Txn is refused and it retries on a new session.
  const std::int64_t second = s->session_lease(5);
  ASSERT_EQ(run({"etcdctl", "--endpoints=http://" + endpoint(), "lease", "revoke",
                 etcd::lease_hex(second)}),
            0);
  auto third = s->try_acquire(request(unique("after-revoke"), Ms{5000}), soon());
  ASSERT_TRUE(third);
  EXPECT_NE(s->session_lease(5), second);
  EXPECT_EQ(attached_lease(*s, key_of(*s, *third.lease)), s->session_lease(5));
  EXPECT_GE(third.lease->ttl, Ms{4500});
  for (const Lease& l : {*third.lease, leases[3]})
    EXPECT_EQ(s->release(l, Ms{0}, soon()), LeaseStatus::ok);
}

// 300 leases (five compare-only Txns of 64 keys, the failing ones read back in Txns of Range ops):
// a few keys deleted from outside are reported lost, exactly those.
TEST(EtcdSession, ABatchOfThreeHundredReportsExactlyTheKeysDeletedFromOutside) {
  auto s = direct();
  auto other = direct();
  std::vector<Lease> leases;
  for (int i = 0; i < 300; ++i) {
    auto got = s->try_acquire(request(unique("batch-" + std::to_string(i)), Ms{10000}), soon());
    ASSERT_TRUE(got) << i;
    leases.push_back(*got.lease);
  }
  const std::set<std::size_t> deleted{0, 127, 128, 200, 299};
  for (std::size_t i : deleted)
    (void)other->gateway().call("/v3/kv/deleterange",
                                {{"key", etcd::base64_encode(key_of(*s, leases[i]))}}, soon());
  std::vector<RenewalRequest> batch;
  for (const Lease& l : leases) batch.push_back({&l, Ms{10000}});
  const auto out = s->renew_batch(batch, test::soon(Ms{30000}));
  ASSERT_EQ(out.size(), leases.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].error) << i << ": " << out[i].error->what();
    EXPECT_EQ(out[i].renewal.status, deleted.contains(i) ? LeaseStatus::lost : LeaseStatus::ok)
        << i;
    if (!deleted.contains(i)) {
      EXPECT_EQ(out[i].renewal.ttl, Ms{10000}) << i;
    }
  }
  for (std::size_t i = 0; i < leases.size(); ++i)
    EXPECT_EQ(s->release(leases[i], Ms{0}, soon()),
              deleted.contains(i) ? LeaseStatus::lost : LeaseStatus::ok)
        << i;
}

// A batch's keys are first checked by compare-only Txns (create revision = token, lease = the
// session: 64 keys per Txn); a chunk whose compares fail is read back to tell its leases apart. A
// key deleted and written again on the very session (same key, new create revision) is lost for
// the old token, which a lease compare alone would have missed; a key moved to another lease
// from outside is moved back and stays ok; the 98 others are ok.
TEST(EtcdSession, ABatchTellsAKeyWrittenAgainOrMovedFromOutsideApartFromTheQuietOnes) {
  auto s = direct();
  std::vector<Lease> leases;
  for (int i = 0; i < 100; ++i) {
    auto got = s->try_acquire(request(unique("compare-" + std::to_string(i)), Ms{10000}), soon());
    ASSERT_TRUE(got) << i;
    leases.push_back(*got.lease);
  }
  const std::int64_t session = s->session_lease(10);
  ASSERT_NE(session, 0);
  const std::string rewritten = key_of(*s, leases[5]);
  (void)s->gateway().call("/v3/kv/deleterange", {{"key", etcd::base64_encode(rewritten)}}, soon());
  (void)s->gateway().call("/v3/kv/put", etcd::ops::put(rewritten, "{}", session), soon());
  ASSERT_EQ(attached_lease(*s, rewritten), session);
  const Json grant = s->gateway().call("/v3/lease/grant", {{"TTL", "60"}}, soon());
  const std::int64_t elsewhere = etcd::int_field(grant, "ID");
  ASSERT_NE(elsewhere, 0);
  const std::string moved = key_of(*s, leases[70]);
  (void)s->gateway().call("/v3/kv/put", etcd::ops::move_to_lease(moved, elsewhere), soon());
  ASSERT_EQ(attached_lease(*s, moved), elsewhere);

  std::vector<RenewalRequest> batch;
  for (const Lease& l : leases) batch.push_back({&l, Ms{10000}});
  const auto out = s->renew_batch(batch, test::soon(Ms{30000}));
  ASSERT_EQ(out.size(), leases.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].error) << i << ": " << out[i].error->what();
    EXPECT_EQ(out[i].renewal.status, i == 5 ? LeaseStatus::lost : LeaseStatus::ok) << i;
    if (i != 5) {
      EXPECT_EQ(out[i].renewal.ttl, Ms{10000}) << i;
    }
  }
  EXPECT_EQ(attached_lease(*s, moved), session) << "the moved key was not moved back";
  for (std::size_t i = 0; i < leases.size(); ++i)
    EXPECT_EQ(s->release(leases[i], Ms{0}, soon()), i == 5 ? LeaseStatus::lost : LeaseStatus::ok)
        << i;
  EXPECT_EQ(attached_lease(*s, rewritten), session) << "a stale release deleted the new key";
  (void)s->gateway().call("/v3/kv/deleterange", {{"key", etcd::base64_encode(rewritten)}}, soon());
  (void)s->gateway().call("/v3/lease/revoke", {{"ID", std::to_string(elsewhere)}}, soon());
}

// A server whose --max-txn-ops is below a full verify chunk (64 keys, two compares each: 128 ops)
// answers "too many operations": the batch halves its chunk (the store remembers it) until the
// server takes it, for the compare Txns and the Range Txns of a failing chunk alike, and every
// lease's result stays exact. A private etcd, started here with --max-txn-ops 6: 2 keys per
// compare Txn after five halvings.
TEST(EtcdSession, AServerWithFewTxnOpsGetsSmallerChunksAndTheSameExactResults) {
  const std::string port = env_or("LEADER_TEST_ETCD_LOWOPS_PORT", "12391");
  const std::string peer = env_or("LEADER_TEST_ETCD_LOWOPS_PEER_PORT", "12392");
  const std::string dir =
      "/dev/shm/leader-etcd-lowops-" + std::to_string(getpid());  // no fsync wait
  std::filesystem::remove_all(dir);
  test::ChildOptions quiet;
  quiet.out = test::Output::null;
  quiet.err = test::Output::null;
  ChildProcess server(
      {"etcd", "--name", "lowops", "--data-dir", dir, "--max-txn-ops", "6", "--listen-client-urls",
       "http://127.0.0.1:" + port, "--advertise-client-urls", "http://127.0.0.1:" + port,
       "--listen-peer-urls", "http://127.0.0.1:" + peer, "--initial-advertise-peer-urls",
       "http://127.0.0.1:" + peer, "--initial-cluster", "lowops=http://127.0.0.1:" + peer},
      quiet);
  const std::string u = "etcd://127.0.0.1:" + port + "?prefix=/leader-lowops";
  auto s = std::make_unique<etcd::EtcdStore>(etcd::Config::from_uri(Uri::parse(u)));
  const auto ready_by = Clock::now() + Ms{20000};
  for (;;) {
    try {
      (void)s->gateway().call("/v3/kv/range", {{"key", etcd::base64_encode("/ready")}}, soon());
      break;
    } catch (const BackendError& e) {
      ASSERT_LT(Clock::now(), ready_by) << "the private etcd did not answer: " << e.what();
      std::this_thread::sleep_for(Ms{100});
    }
  }
  {  // the server does refuse a Txn of more than 6 ops
    Json compares = Json::array();
    for (int i = 0; i < 8; ++i) compares.push_back(etcd::ops::create_revision_is("/x", 0));
    const etcd::Reply r =
        s->gateway().post("/v3/kv/txn", etcd::ops::txn(compares, Json::array()), soon());
    ASSERT_FALSE(r.ok());
    ASSERT_NE(r.message.find("too many operations"), std::string::npos) << r.message;
  }
  std::vector<Lease> leases;
  for (int i = 0; i < 40; ++i) {
    auto got = s->try_acquire(request(unique("lowops-" + std::to_string(i)), Ms{10000}), soon());
    ASSERT_TRUE(got) << i;
    leases.push_back(*got.lease);
  }
  const std::set<std::size_t> deleted{0, 17, 39};
  for (std::size_t i : deleted)
    (void)s->gateway().call("/v3/kv/deleterange",
                            {{"key", etcd::base64_encode(key_of(*s, leases[i]))}}, soon());
  std::vector<RenewalRequest> batch;
  for (const Lease& l : leases) batch.push_back({&l, Ms{10000}});
  for (int round = 0; round < 2; ++round) {  // the second with the chunk size remembered
    const auto out = s->renew_batch(batch, test::soon(Ms{30000}));
    ASSERT_EQ(out.size(), leases.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_FALSE(out[i].error) << round << "/" << i << ": " << out[i].error->what();
      EXPECT_EQ(out[i].renewal.status, deleted.contains(i) ? LeaseStatus::lost : LeaseStatus::ok)
          << round << "/" << i;
    }
  }
  for (std::size_t i = 0; i < leases.size(); ++i)
    EXPECT_EQ(s->release(leases[i], Ms{0}, soon()),
              deleted.contains(i) ? LeaseStatus::lost : LeaseStatus::ok)
        << i;
  s.reset();
  (void)server.kill();
  std::filesystem::remove_all(dir);
}

// A group retry (the same owner asking again) finds its slot instead of taking a second one.
TEST(EtcdSession, AGroupRetryOfTheSameOwnerGetsItsOwnSlotBack) {
  auto s = direct();
  auto name = unique("group-retry");
  auto other = s->try_acquire(request(name, Ms{5000}, 3), soon());
  ASSERT_TRUE(other);
  auto req = request(name, Ms{5000}, 3);
  auto got = s->try_acquire(req, soon());
  ASSERT_TRUE(got);
  auto again = s->try_acquire(req, soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, got.lease->slot);
  EXPECT_EQ(again.lease->fencing_token, got.lease->fencing_token);
  EXPECT_EQ(s->inspect(name, soon()).holders.size(), 2u);
  for (const Lease& l : {*other.lease, *again.lease})
    EXPECT_EQ(s->release(l, Ms{0}, soon()), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::etcdtest
