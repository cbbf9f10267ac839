// ZooKeeper-specific cases against the real test server: URI options, digest auth, node layout,
// session-bound leases, orphan cleanup after an unknown outcome, and a paused holder process.

#include <gtest/gtest.h>
#include <signal.h>

#include <latch>
#include <set>
#include <thread>

#include "leader/leader.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), "it-node", ttl, slots};
}

TEST(ZooKeeperUri, BothSchemesAreRegistered) {
  auto schemes = registered_schemes();
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "zk"), schemes.end());
  EXPECT_NE(std::find(schemes.begin(), schemes.end(), "zookeeper"), schemes.end());
  EXPECT_EQ(open("zookeeper://" + hosts() + "?session_timeout=2s")->scheme(), "zookeeper");
}

TEST(ZooKeeperUri, BadOptionsNameTheValueAndHideThePassword) {
  auto message = [](const std::string& u) {
    try {
      (void)open(u);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto m = message("zk://bob:s3cret@" + hosts() + "?root=leader");
  EXPECT_NE(m.find("prefix 'leader' must start with '/'"), std::string::npos) << m;
  EXPECT_EQ(m.find("s3cret"), std::string::npos) << m;
  m = message("zk://" + hosts() + "?prefix=leader");  // `root` is prefix's deprecated spelling
  EXPECT_NE(m.find("prefix 'leader' must start with '/'"), std::string::npos) << m;
  m = message("zk://" + hosts() + "?prefix=/a&root=/b");
  EXPECT_NE(m.find("'root' and 'prefix'"), std::string::npos) << m;
  m = message("zk://" + hosts() + "?acl=creator");
  EXPECT_NE(m.find("acl=creator needs digest credentials"), std::string::npos) << m;
  m = message("zk://" + hosts() + "?sesion_timeout=2s");
  EXPECT_NE(m.find("sesion_timeout"), std::string::npos) << m;
  m = message("zk://" + hosts() + "/a//b");
  EXPECT_NE(m.find("chroot"), std::string::npos) << m;
  m = message("zk://bob@" + hosts());
  EXPECT_NE(m.find("user:password"), std::string::npos) << m;
}

TEST(ZooKeeperUri, AChrootKeepsEveryNodeUnderIt) {
  auto root = open(uri("session_timeout=2s&root=/zk-it-chroot"));
  // The chroot node itself must exist (ZooKeeper does not create it): make it through a lock.
  auto bootstrap = root->try_acquire(request("bootstrap", Ms{2000}), soon());
  ASSERT_TRUE(bootstrap);
  (void)root->release(*bootstrap.lease, Ms{0}, soon());
  auto chrooted = open("zk://" + hosts() + "/zk-it-chroot?session_timeout=2s&root=/inner");
  auto name = unique("chroot");
  auto got = chrooted->try_acquire(request(name, Ms{2000}), soon());
  ASSERT_TRUE(got);
  auto outside = open(uri("session_timeout=2s&root=/zk-it-chroot/inner"));
  EXPECT_EQ(outside->inspect(name, soon()).holders.at(0).fencing_token, got.lease->fencing_token);
  EXPECT_EQ(chrooted->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ZooKeeperAuth, DigestCredentialsAndCreatorAclLockOutOtherUsers) {
  const std::string root = "/" + unique("auth");
  auto alice =
      open("zk://alice:wonder@" + hosts() + "?session_timeout=2s&acl=creator&root=" + root);
  auto name = unique("secured");
  auto got = alice->try_acquire(request(name, Ms{2000}), soon());
  ASSERT_TRUE(got);
  auto anonymous = open(uri("session_timeout=2s&root=" + root));
  try {
    (void)anonymous->try_acquire(request(name, Ms{2000}), soon());
    ADD_FAILURE() << "an unauthenticated client created a node under a creator-only ACL";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_EQ(std::string(e.what()).find("wonder"), std::string::npos);
  }
  auto mallory = open("zk://mallory:guess@" + hosts() + "?session_timeout=2s&root=" + root);
  EXPECT_THROW((void)mallory->inspect(name, soon()), BackendError);
  EXPECT_EQ(alice->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ZooKeeperStore, FencingTokensAreCreationZxidsAndGrowAcrossLocksAndSlots) {
  auto s = open(uri("session_timeout=2s"));
  std::uint64_t last = 0;
  for (int i = 0; i < 4; ++i) {
    auto got = s->try_acquire(request(unique("fence"), Ms{2000}, i % 2 == 0 ? 0 : 3), soon());
    ASSERT_TRUE(got);
    EXPECT_GT(got.lease->fencing_token, last);
    last = got.lease->fencing_token;
    EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  }
}

// A group claim lost to another claim starts over, at most `slots` times (then the attempt
// answers "held": the group was filled since its listing). N claimants that arrive at once still
// all get in: the i-th to win lost i - 1 races.
TEST(ZooKeeperStore, GroupClaimantsArrivingTogetherAllGetASlot) {
  constexpr int kSlots = 4;
  std::vector<std::shared_ptr<LeaseStore>> stores;  // one session each, as processes
  for (int i = 0; i < kSlots; ++i) stores.push_back(open(uri("session_timeout=4s")));
  for (int round = 0; round < 5; ++round) {
    const std::string lock = unique("together");
    std::latch start(kSlots);  // the claims start at once
    std::vector<Acquired> got(kSlots);
    std::vector<std::thread> threads;
    for (int i = 0; i < kSlots; ++i)
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        got[i] = stores[i]->try_acquire(request(lock, Ms{4000}, kSlots), soon());
      });
    for (auto& t : threads) t.join();
    std::set<int> slots;
    for (int i = 0; i < kSlots; ++i) {
      ASSERT_TRUE(got[i]) << "round " << round << ": claimant " << i << " got no slot";
      slots.insert(got[i].lease->slot);
    }
    EXPECT_EQ(slots.size(), static_cast<std::size_t>(kSlots)) << "round " << round;
    for (int i = 0; i < kSlots; ++i)
      EXPECT_EQ(stores[i]->release(*got[i].lease, Ms{0}, soon()), LeaseStatus::ok);
  }
}

TEST(ZooKeeperStore, GrantedTtlIsCappedByTheSessionTimeout) {
  auto fixed = open(uri("session_timeout=2s"));
  auto got = fixed->try_acquire(request(unique("cap"), Ms{20000}), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(got.lease->ttl, Ms{2000});
  EXPECT_EQ(fixed->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  auto automatic = open(uri(""));  // session_timeout=auto: one session per ttl
  auto own = automatic->try_acquire(request(unique("auto"), Ms{3000}), soon());
  ASSERT_TRUE(own);
  EXPECT_EQ(own.lease->ttl, Ms{3000});
  EXPECT_EQ(automatic->release(*own.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ZooKeeperStore, ALeaseOutlivesTheStoreObjectUntilItsTtl) {
  auto name = unique("linger");
  Lease lease;
  {
    auto s = open(uri("session_timeout=2s"));
    auto got = s->try_acquire(request(name, Ms{2000}), soon());
    ASSERT_TRUE(got);
    lease = *got.lease;
  }
  auto reader = open(uri("session_timeout=2s"));
  EXPECT_TRUE(reader->inspect(name, soon()).held());
  // Any store of the process can release it by owner token.
  EXPECT_EQ(reader->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(reader->inspect(name, soon()).held());
}

TEST(ZooKeeperStore, MinLeaseTimeHoldsEvenAfterTheStoreObjectIsGone) {
  auto name = unique("min-lease");
  ElectionOptions o;
  o.wait_time = Ms{0};
  o.lease_time = Ms{4000};
  o.min_lease_time = Ms{1500};
  o.node_id = "min-lease-holder";
  const auto t0 = std::chrono::steady_clock::now();
  {
    LeaderElector e(open(uri("")), o);  // session_timeout=auto
    ASSERT_TRUE(e.run_if_leader(name, [] {}));
  }  // elector and store destroyed: the kept node lingers with its session
  auto reader = open(uri("session_timeout=2s"));
  EXPECT_TRUE(reader->inspect(name, soon()).held());
  EXPECT_TRUE(eventually([&] { return !reader->inspect(name, soon()).held(); }, Ms{4000}));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, Ms{1400});
}

TEST(ZooKeeperStore, AnAcquireWhoseReplyIsLostLeavesNoNodeBehind) {
  auto s = open(uri("session_timeout=4s"));
  auto name = unique("orphan");
  {
    ServerPause pause;
    EXPECT_THROW((void)s->try_acquire(request(name, Ms{4000}), Deadline::after(Ms{300})),
                 BackendError);
  }  // the queued create now runs on the server: the store must withdraw it
  auto other = open(uri("session_timeout=4s"));
  EXPECT_TRUE(eventually(
      [&] {
        auto got = other->try_acquire(request(name, Ms{4000}), soon());
        if (got) (void)other->release(*got.lease, Ms{0}, soon());
        return got.lease.has_value();
      },
      Ms{3000}));
}

TEST(ZooKeeperStore, ServerPausedLongerThanTheLeaseFiresStopAndAnotherTakesOver) {
  auto name = unique("server-pause");
  ElectionOptions o;
  o.wait_time = Ms{0};
  o.lease_time = Ms{2000};
  o.auto_extend = true;
  o.node_id = "paused-server-holder";
  LeaderElector holder(open(uri("session_timeout=2s")), o);
  std::optional<std::uint64_t> first;
  bool stopped = false;
  auto r = holder.run_if_leader_result(name, [&](LeaderContext& ctx) {
    first = ctx.fencing_token();
    ServerPause pause;
    const auto paused_at = std::chrono::steady_clock::now();
    while (!ctx.stop_token().stop_requested() &&
           std::chrono::steady_clock::now() < paused_at + Ms{5000})
      std::this_thread::sleep_for(Ms{10});
    stopped = ctx.stop_token().stop_requested();
    std::this_thread::sleep_until(paused_at + Ms{3000});  // a pause longer than the lease
  });
  EXPECT_TRUE(stopped);
  ASSERT_TRUE(first.has_value());
  LeaderElector next(
      open(uri("session_timeout=2s")),
      ElectionOptions{.wait_time = Ms{10000}, .lease_time = Ms{2000}, .node_id = "next"});
  auto token = next.run_if_leader(name, [](LeaderContext& c) { return c.fencing_token(); });
  ASSERT_TRUE(token.has_value());
  EXPECT_GT(*token, *first);
  (void)r;
}

TEST(ZooKeeperStore, AHolderProcessPausedPastItsSessionLosesTheLock) {
  auto name = unique("client-pause");
  Proc holder({LEADER_CONTRACT_CHILD, "hold", "--uri", uri("session_timeout=2s"), "--lock", name,
               "--lease-ms", "2000", "--auto-extend"});
  std::string line = holder.read_line();
  ASSERT_EQ(line.rfind("HELD ", 0), 0u) << line;
  const std::uint64_t held_token = std::stoull(line.substr(5));
  auto s = open(uri("session_timeout=2s"));
  EXPECT_FALSE(s->try_acquire(request(name, Ms{2000}), soon()));
  holder.signal(SIGSTOP);  // longer than the 2 s session: the server expires it
  std::optional<Lease> taken;
  EXPECT_TRUE(eventually(
      [&] {
        auto got = s->try_acquire(request(name, Ms{2000}), soon());
        if (got) taken = *got.lease;
        return got.lease.has_value();
      },
      Ms{8000}));
  holder.signal(SIGCONT);
  ASSERT_TRUE(taken.has_value());
  EXPECT_GT(taken->fencing_token, held_token);
  std::this_thread::sleep_for(Ms{500});  // the resumed holder finds its session expired
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, taken->fencing_token);
  EXPECT_EQ(s->release(*taken, Ms{0}, soon()), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::zktest
