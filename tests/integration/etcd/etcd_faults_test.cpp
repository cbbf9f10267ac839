// Faults against the real test server: a pause (SIGSTOP) longer than the lease, a server restart
// under a held lease, kill -9 of a holder process, endpoint failover, and lease moves.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "etcd_test_util.hpp"

namespace leader::etcdtest {
namespace {

const std::string kPrefix = "/leader-faults";

std::shared_ptr<LeaseStore> store(const std::string& extra = "") {
  return open(uri(kPrefix, extra));
}

LeaseRequest request(const std::string& lock, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), "faults-node", ttl, slots};
}

// SIGCONT in the destructor, so a failed assertion never leaves the server stopped.
struct Paused : test::ProcessPause {
  Paused() : test::ProcessPause(etcd_pid()) {}
};

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(EtcdFaults, APauseLongerThanTheLeaseLosesItAndAnotherOwnerTakesOver) {
  auto name = unique("sigstop");
  auto s = store();
  auto got = s->try_acquire(request(name, Ms{1000}), soon());
  ASSERT_TRUE(got);
  {
    Paused pause;
    Lease copy = *got.lease;
    EXPECT_THROW((void)s->renew(copy, Ms{1000}, Deadline::after(Ms{300})), BackendError);
    std::this_thread::sleep_for(Ms{2500});
  }
  Lease copy = *got.lease;
  EXPECT_EQ(s->renew(copy, Ms{1000}, soon()).status, LeaseStatus::lost);
  std::optional<Lease> next;
  for (int i = 0; i < 40 && !next; ++i) {
    if (auto g = store()->try_acquire(request(name, Ms{2000}), soon()))
      next = *g.lease;
    else
      std::this_thread::sleep_for(Ms{100});
  }
  ASSERT_TRUE(next);
  EXPECT_GT(next->fencing_token, got.lease->fencing_token);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::lost);
  EXPECT_EQ(s->release(*next, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(EtcdFaults, TheStopTokenFiresDuringAPauseAndTheLockIsFreeAfterIt) {
  auto name = unique("sigstop-elector");
  LeaderElector e(store(), {.wait_time = Ms{0}, .lease_time = Ms{1500}, .auto_extend = true});
  bool stopped = false;
  auto r = e.run_if_leader_result(name, [&](LeaderContext& ctx) {
    Paused pause;
    for (int i = 0; i < 60 && !ctx.stop_token().stop_requested(); ++i)
      std::this_thread::sleep_for(Ms{50});
    stopped = ctx.stop_token().stop_requested();
    std::this_thread::sleep_for(Ms{1500});  // stay paused past the server-side expiry
  });
  EXPECT_TRUE(r.elected() || r.failed());
  EXPECT_TRUE(stopped);
  LeaderElector other(store(), {.wait_time = Ms{4000}, .lease_time = Ms{1500}});
  EXPECT_TRUE(other.run_if_leader(name, [] {}));
}

TEST(EtcdFaults, AHeldLeaseSurvivesAServerRestartAndTokensKeepIncreasing) {
  auto name = unique("restart");
  auto s = store();
  auto got = s->try_acquire(request(name, Ms{15000}), soon());
  ASSERT_TRUE(got);
  const pid_t pid = etcd_pid();
  ::kill(pid, SIGTERM);
  for (int i = 0; i < 200 && alive(pid); ++i) std::this_thread::sleep_for(Ms{50});
  auto t0 = std::chrono::steady_clock::now();
  try {
    (void)s->try_acquire(request(name, Ms{1000}), Deadline::after(Ms{2000}));
    ADD_FAILURE() << "no error while etcd was down";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms{2500});
  // setsid: the restarted server must not belong to this test's session or process group.
  const std::string script = std::string(LEADER_SOURCE_DIR) + "/scripts/test-servers.sh";
  ASSERT_EQ(run({"setsid", "-w", "bash", script, "start", "etcd"}), 0);
  Lease lease = *got.lease;
  EXPECT_EQ(s->renew(lease, Ms{15000}, soon()).status, LeaseStatus::ok);  // same client reconnects
  EXPECT_FALSE(store()->try_acquire(request(name, Ms{1000}), soon()));
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  auto next = store()->try_acquire(request(name, Ms{1000}), soon());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, got.lease->fencing_token);
  EXPECT_EQ(s->release(*next.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(EtcdFaults, AHolderKilledWithSigkillKeepsItsKeyUntilTheLeaseExpires) {
  for (int slots : {0, 2}) {
    auto name = unique("sigkill");
    std::vector<std::string> argv{LEADER_CONTRACT_CHILD, "hold",   "--uri",
                                  uri(kPrefix),          "--lock", name,
                                  "--lease-ms",          "1500",   "--auto-extend"};
    if (slots > 0) argv.insert(argv.end(), {"--slots", std::to_string(slots)});
    ChildProcess child(argv);
    auto line = child.next_line(Ms{10000});
    ASSERT_TRUE(line && line->rfind("HELD ", 0) == 0) << line.value_or("(no output)");
    auto s = store();
    auto state = s->inspect(name, soon());
    ASSERT_EQ(state.holders.size(), 1u);
    EXPECT_EQ(state.holders[0].node_id, "child-" + std::to_string(child.pid()));
    child.signal(SIGKILL);
    child.wait();
    EXPECT_TRUE(s->inspect(name, soon()).held());  // nobody revoked it: it expires on the server
    std::optional<Lease> next;
    auto t0 = std::chrono::steady_clock::now();
    while (!next && std::chrono::steady_clock::now() - t0 < Ms{5000}) {
      if (auto g = s->try_acquire(request(name, Ms{2000}, slots), soon()))  // same shape
        next = *g.lease;
      else
        std::this_thread::sleep_for(Ms{100});
    }
    ASSERT_TRUE(next) << "slots " << slots;
    EXPECT_GT(next->fencing_token, state.holders[0].fencing_token);
    EXPECT_EQ(s->release(*next, Ms{0}, soon()), LeaseStatus::ok);
  }
}

TEST(EtcdFaults, DeadEndpointsAreSkippedAndAllDeadIsUnavailable) {
  auto name = unique("failover");
  for (const std::string& hosts : {"127.0.0.1:1," + endpoint(), endpoint() + ",127.0.0.1:1"}) {
    auto s = open("etcd://" + hosts + "?prefix=" + kPrefix);
    for (int i = 0; i < 3; ++i) {
      auto got = s->try_acquire(request(name, Ms{2000}), soon());
      ASSERT_TRUE(got) << hosts;
      EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
    }
  }
  auto dead = open("etcd://127.0.0.1:1,127.0.0.1:2?prefix=" + kPrefix);
  try {
    (void)dead->inspect(name, soon());
    ADD_FAILURE() << "no error without a reachable endpoint";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable);
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:2"), std::string::npos) << e.what();
  }
}

// A member that accepts connections but never answers (a listening socket nobody accepts from):
// a sent request is never replayed on another member (its outcome is unknown), the call fails
// with deadline_exceeded at its deadline, and the next call starts with the next endpoint.
TEST(EtcdFaults, AnUnresponsiveMemberCostsOneCallAndIsNotReplayed) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string silent = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto s = open("etcd://" + silent + "," + endpoint() + "?prefix=" + kPrefix);
  auto name = unique("silent");
  auto t0 = std::chrono::steady_clock::now();
  try {
    (void)s->try_acquire(request(name, Ms{2000}), Deadline::after(Ms{400}));
    ADD_FAILURE() << "the silent member answered";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms{1000});
  auto got = s->try_acquire(request(name, Ms{2000}), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  ::close(fd);
}

TEST(EtcdFaults, LargeGroupsFillEverySlotOnceAcrossNestedTxnChunks) {
  auto name = unique("big-group");
  auto s = store();
  const int slots = 20;  // more than one nested Txn of 16 levels
  std::vector<Lease> held;
  for (int i = 0; i < slots; ++i) {
    auto got = s->try_acquire(request(name, Ms{5000}, slots), soon());
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got.lease->slot, i);
    held.push_back(*got.lease);
  }
  EXPECT_FALSE(s->try_acquire(request(name, Ms{5000}, slots), soon()));
  EXPECT_EQ(s->inspect(name, soon()).holders.size(), static_cast<std::size_t>(slots));
  ASSERT_EQ(s->release(held[3], Ms{0}, soon()), LeaseStatus::ok);
  auto again = s->try_acquire(request(name, Ms{5000}, slots), soon());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, 3);  // the lowest free slot; the others keep theirs
  held[3] = *again.lease;
  for (const Lease& l : held) EXPECT_EQ(s->release(l, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(s->inspect(name, soon()).held());
}

TEST(EtcdFaults, ALongerRenewMovesTheKeyToANewLeaseKeepingItsToken) {
  auto name = unique("extend");
  auto s = store();
  auto got = s->try_acquire(request(name, Ms{1000}), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  ASSERT_EQ(s->renew(lease, Ms{6000}, soon()).status, LeaseStatus::ok);
  std::this_thread::sleep_for(Ms{2200});  // longer than the first lease
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, lease.fencing_token);
  EXPECT_GT(state.holders[0].expires_in, Ms{2000});
  EXPECT_EQ(s->renew(lease, Ms{6000}, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(s->inspect(name, soon()).held());
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::lost);
}

TEST(EtcdFaults, ReleaseWithKeepForHoldsThatLongThenFrees) {
  auto name = unique("keep-for");
  auto s = store();
  auto got = s->try_acquire(request(name, Ms{30000}), soon());
  ASSERT_TRUE(got);
  ASSERT_EQ(s->release(*got.lease, Ms{1000}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(s->try_acquire(request(name, Ms{1000}), soon()));
  std::optional<Lease> next;
  for (int i = 0; i < 40 && !next; ++i) {
    if (auto g = s->try_acquire(request(name, Ms{1000}), soon()))
      next = *g.lease;
    else
      std::this_thread::sleep_for(Ms{100});
  }
  ASSERT_TRUE(next) << "still held long after keep_for";
  EXPECT_EQ(s->release(*next, Ms{0}, soon()), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::etcdtest
