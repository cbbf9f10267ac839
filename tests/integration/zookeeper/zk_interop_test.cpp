// Interoperation with kazoo's Lock recipe (Debian python3-kazoo, run with /usr/bin/python3) and
// a restart of the ZooKeeper server under a held lease.

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "leader/leader.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

const std::string kRoot = "/leader-interop";

std::shared_ptr<LeaseStore> store() { return open(uri("session_timeout=2s&root=" + kRoot)); }

LeaseRequest request(const std::string& lock) {
  return {lock, new_owner_token(), "leader-node", Ms{2000}, 0};
}

std::vector<std::string> kazoo(const std::string& cmd, const std::string& lock,
                               std::vector<std::string> extra = {}) {
  std::vector<std::string> argv{"/usr/bin/python3", LEADER_ZK_KAZOO_PEER, cmd, hosts(),
                                kRoot + "/" + lock};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST(ZooKeeperInterop, WhileKazooHoldsTheLockOursSkipsAndSeesItsHolder) {
  auto name = unique("kazoo-holds");
  Proc holder(kazoo("hold", name, {"2"}));
  std::string line = holder.read_line();
  ASSERT_EQ(line.rfind("HELD ", 0), 0u) << line;
  auto s = store();
  EXPECT_FALSE(s->try_acquire(request(name), soon()));
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "kazoo-holder");
  holder.close_stdin();  // kazoo releases
  EXPECT_EQ(holder.wait(), 0);
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  EXPECT_GT(got.lease->fencing_token, state.holders[0].fencing_token);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ZooKeeperInterop, WhileOursHoldsTheLockKazooSkips) {
  auto name = unique("ours-holds");
  auto s = store();
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  {
    Proc probe(kazoo("try", name));
    EXPECT_EQ(probe.read_line(), "SKIPPED");
    EXPECT_EQ(probe.wait(), 0);
  }
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  Proc probe(kazoo("try", name));
  EXPECT_EQ(probe.read_line(), "ACQUIRED");
  EXPECT_EQ(probe.wait(), 0);
}

TEST(ZooKeeperInterop, AKazooHolderKilledWithSigkillIsReplacedAfterItsSession) {
  auto name = unique("kazoo-killed");
  Proc holder(kazoo("hold", name, {"2"}));
  ASSERT_EQ(holder.read_line().rfind("HELD ", 0), 0u);
  auto s = store();
  EXPECT_FALSE(s->try_acquire(request(name), soon()));
  holder.signal(SIGKILL);
  holder.wait();
  std::optional<Lease> got;
  EXPECT_TRUE(eventually(
      [&] {
        auto a = s->try_acquire(request(name), soon());
        if (a) got = *a.lease;
        return a.lease.has_value();
      },
      Ms{8000}));
  if (got) {
    EXPECT_EQ(s->release(*got, Ms{0}, soon()), LeaseStatus::ok);
  }
}

// Restarts the test server (SIGTERM, then scripts/test-servers.sh start zookeeper); its data
// directory survives, and with it the sessions.
void restart_server() {
  pid_t pid = server_pid();
  kill(pid, SIGTERM);
  for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(Ms{50});
  ASSERT_NE(kill(pid, 0), 0) << "zookeeper did not stop";
  std::string cmd = std::string(LEADER_SOURCE_DIR) + "/scripts/test-servers.sh start zookeeper";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(ZooKeeperServer, ALeaseSurvivesAServerRestartWithinItsSessionAndTokensKeepGrowing) {
  auto name = unique("restart");
  auto s = open(uri("session_timeout=15s&root=" + kRoot));
  auto got = s->try_acquire({name, new_owner_token(), "n", Ms{15000}, 0}, soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  restart_server();
  std::optional<LeaseStatus> status;
  EXPECT_TRUE(eventually(
      [&] {
        try {
          status = s->renew(lease, Ms{15000}, Deadline::after(Ms{1000})).status;
          return true;
        } catch (const BackendError&) {
          return false;  // still reconnecting
        }
      },
      Ms{12000}));
  EXPECT_EQ(status, LeaseStatus::ok);
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  auto again = store()->try_acquire(request(name), soon());
  ASSERT_TRUE(again);
  EXPECT_GT(again.lease->fencing_token, lease.fencing_token);
}

}  // namespace
}  // namespace leader::zktest
