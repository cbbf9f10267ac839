// Interoperation with etcd's own concurrency.Mutex, as `etcdctl lock` uses it: the two exclude
// each other in both directions, through the library API and through `leader run`.

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "clients/etcd/codec.hpp"
#include "etcd/etcd_store.hpp"
#include "etcd_test_util.hpp"

namespace leader::etcdtest {
namespace {

const std::string kPrefix = "/leader-interop";

std::shared_ptr<LeaseStore> store() { return open(uri(kPrefix)); }

LeaseRequest request(const std::string& lock, int slots = 0) {
  return {lock, new_owner_token(), "leader-node", Ms{3000}, slots};
}

// `etcdctl lock <prefix>/<lock> -- sh -c <script>`: the script runs while etcdctl holds the lock.
std::vector<std::string> etcdctl_lock(const std::string& lock, const std::string& script) {
  return {
      "etcdctl", "--endpoints=http://" + endpoint(), "lock", kPrefix + "/" + lock, "--", "sh", "-c",
      script};
}

TEST(EtcdInterop, WhileEtcdctlHoldsTheLockOursSkipsAndSeesItsHolder) {
  auto name = unique("etcdctl-holds");
  ChildProcess holder(etcdctl_lock(name, "echo HELD $ETCD_LOCK_REV; sleep 2"));
  auto line = holder.next_line(Ms{10000});
  ASSERT_TRUE(line && line->rfind("HELD ", 0) == 0) << line.value_or("(no output)");
  auto s = store();
  EXPECT_FALSE(s->try_acquire(request(name), soon()));
  try {  // a group must not share it either: etcdctl holds it as a single leader
    (void)s->try_acquire(request(name, 2), soon());
    ADD_FAILURE() << "a group request was not refused while etcdctl holds the lock";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
  }
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "");  // etcdctl writes an empty value
  EXPECT_EQ(std::to_string(state.holders[0].fencing_token), line->substr(5));
  EXPECT_EQ(holder.wait(), 0);  // etcdctl unlocks after the script
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  EXPECT_GT(got.lease->fencing_token, state.holders[0].fencing_token);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(EtcdInterop, WhileOursHoldsTheLockEtcdctlWaitsUntilItIsReleased) {
  auto name = unique("ours-holds");
  auto s = store();
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  ChildProcess waiter(etcdctl_lock(name, "echo GOT"));
  EXPECT_FALSE(waiter.next_line(Ms{1500})) << "etcdctl got a lock that we hold";
  // etcdctl's waiter key is there now, but the holder is still ours (lowest create revision).
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "leader-node");
  EXPECT_EQ(state.holders[0].fencing_token, got.lease->fencing_token);
  Lease lease = *got.lease;
  EXPECT_EQ(s->renew(lease, Ms{3000}, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(s->release(lease, Ms{0}, soon()), LeaseStatus::ok);
  auto line = waiter.next_line(Ms{5000});
  EXPECT_EQ(line.value_or("(none)"), "GOT");
  EXPECT_EQ(waiter.wait(), 0);
}

TEST(EtcdInterop, OurContenderLeavesNoKeyBehind) {
  auto name = unique("no-residue");
  auto s = std::make_shared<etcd::EtcdStore>(etcd::Config::from_uri(Uri::parse(uri(kPrefix))));
  auto got = s->try_acquire(request(name), soon());
  ASSERT_TRUE(got);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(s->try_acquire(request(name), soon()));
  auto r =
      s->gateway().call("/v3/kv/range",
                        {{"key", etcd::base64_encode(s->lock_prefix(name))},
                         {"range_end", etcd::base64_encode(etcd::prefix_end(s->lock_prefix(name)))},
                         {"count_only", true}},
                        soon());
  EXPECT_EQ(etcd::int_field(r, "count"), 1);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
}

#ifdef LEADER_CLI_BINARY
std::vector<std::string> leader_run(const std::string& lock, std::vector<std::string> cmd,
                                    const std::string& wait = "0s") {
  std::vector<std::string> argv{
      LEADER_CLI_BINARY, "run", "--store",          uri(kPrefix), "--lock", lock, "--wait", wait,
      "--ttl",           "5s",  "--skip-exit-code", "3",          "--"};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

TEST(EtcdInterop, LeaderRunSkipsWhileEtcdctlHoldsTheLock) {
  auto name = unique("cli-etcdctl-holds");
  ChildProcess holder(etcdctl_lock(name, "echo HELD; sleep 2"));
  ASSERT_EQ(holder.next_line(Ms{10000}).value_or(""), "HELD");
  const std::string marker = "/tmp/leader-etcd-cli-" + name;
  EXPECT_EQ(run(leader_run(name, {"touch", marker})), 3);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(holder.wait(), 0);
  EXPECT_EQ(run(leader_run(name, {"touch", marker})), 0);
  EXPECT_TRUE(std::filesystem::exists(marker));
  std::filesystem::remove(marker);
}

TEST(EtcdInterop, EtcdctlWaitsWhileLeaderRunHoldsTheLock) {
  auto name = unique("cli-ours-holds");
  ChildProcess ours(leader_run(name, {"sh", "-c", "echo RUNNING; sleep 4"}));
  ASSERT_EQ(ours.next_line(Ms{10000}).value_or(""), "RUNNING");
  ChildProcess waiter(etcdctl_lock(name, "echo GOT"));
  EXPECT_FALSE(waiter.next_line(Ms{1000})) << "etcdctl got the lock while leader run held it";
  EXPECT_EQ(ours.wait(), 0);
  EXPECT_EQ(waiter.next_line(Ms{10000}).value_or("(none)"), "GOT");
  EXPECT_EQ(waiter.wait(), 0);
}
#endif

}  // namespace
}  // namespace leader::etcdtest
