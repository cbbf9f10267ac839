// "The server is the judge" for `leader run` (DESIGN section 5): while `leader` itself is stopped
// (SIGSTOP), flooded with SIGTERM, or sent SIGTSTP, a second client keeps calling try_acquire on
// the real store. The command's last write must come before the send time of that client's first
// successful acquisition, whatever leader's own arithmetic says.

#include <signal.h>

#include <algorithm>
#include <thread>

#include "cli_support.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"
#include "second_client.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;

// The stores the judge runs on: the SQLite file of the test, and the shared redis-server.
class Judge : public CliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    lock_ = "judge-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(lock_.begin(), lock_.end(), '/', '-');
    uri_ = GetParam() == "sqlite" ? store_ : "redis://127.0.0.1:16379/0?prefix=cli-judge:";
  }

  // `leader run --store <uri> --lock <lock> <options> -- <command>`.
  Process start(const std::vector<std::string>& options, const std::vector<std::string>& command) {
    std::vector<std::string> argv = {leader_binary(), "run", "--store", uri_, "--lock", lock_};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.emplace_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return Process(argv, dir_);
  }

  void wait_for_writes(const std::string& file) {
    ASSERT_TRUE(eventually([&] { return timestamps(path(file)).size() >= 5; }))
        << "the command never wrote";
  }

  std::string lock_;
  std::string uri_;
};

TEST_P(Judge, CommandStopsWritingBeforeTheServerGivesTheLockAwayWhileLeaderIsStopped) {
  Process holder = start({"--ttl", "2s"}, sh(timestamp_writer(path("w"))));
  wait_for_writes("w");
  SecondClient observer(uri_, lock_);
  auto stopped_at = Wall::now();
  holder.signal(SIGSTOP);
  expect_no_write_after_grant(observer, path("w"), stopped_at, "leader run");
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(), 75) << holder.err();
  EXPECT_THAT(holder.err(), ::testing::HasSubstr("lost"));
}

TEST_P(Judge, ADoubleForkedSetsidWriterIsKilledToo) {
  Process holder = start({"--ttl", "2s"}, sh("setsid -f sh -c '" + timestamp_writer(path("w")) +
                                             "' < /dev/null > /dev/null 2>&1; exec sleep 300"));
  wait_for_writes("w");
  SecondClient observer(uri_, lock_);
  auto stopped_at = Wall::now();
  holder.signal(SIGSTOP);
  expect_no_write_after_grant(observer, path("w"), stopped_at, "leader run");
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(), 75) << holder.err();
}

TEST_P(Judge, ASigtermStormEscalatesToSigkillAfterGraceAndOnlyThenReleases) {
  // The command ignores SIGTERM and SIGINT; only the escalation to SIGKILL can end it.
  Process holder = start({"--ttl", "10s", "--grace", "1s"},
                         sh("trap '' TERM INT; " + timestamp_writer(path("w"))));
  wait_for_writes("w");
  SecondClient observer(uri_, lock_);
  auto storm_at = Wall::now();
  for (int i = 0; i < 20; ++i) {
    holder.signal(i % 2 == 0 ? SIGTERM : SIGINT);
    std::this_thread::sleep_for(20ms);
  }
  expect_no_write_after_grant(observer, path("w"), storm_at, "leader run");
  EXPECT_EQ(holder.wait(), 128 + SIGKILL) << holder.err();
}

TEST_P(Judge, SigtstpDoesNotSuspendLeaderOrItsLease) {
  Process holder = start({"--ttl", "2s"}, sh(timestamp_writer(path("w"))));
  wait_for_writes("w");
  SecondClient observer(uri_, lock_);
  holder.signal(SIGTSTP);
  std::this_thread::sleep_for(4s);  // two ttls: a suspended leader would have lost the lease
  std::string stat = read_file("/proc/" + std::to_string(holder.pid()) + "/stat");
  EXPECT_NE(stat.substr(stat.rfind(')') + 2, 1), "T") << "leader was suspended: " << stat;
  EXPECT_FALSE(observer.taken()) << "the lease lapsed while leader was sent SIGTSTP";
  holder.signal(SIGCONT);
  holder.signal(SIGKILL);
  EXPECT_EQ(holder.wait(), 128 + SIGKILL);
}

TEST_P(Judge, TheLockIsReleasedOnlyAfterASetsidDescendantHasExited) {
  Process holder = start({}, sh("setsid -f sh -c 'sleep 1; echo done > " + path("bg") +
                                "' < /dev/null > /dev/null 2>&1"));
  EXPECT_EQ(holder.wait(), 0) << holder.err();
  EXPECT_EQ(read_file(path("bg")), "done\n") << "leader returned before its descendants exited";
}

std::vector<std::string> judged_stores() {
  std::vector<std::string> out = {"sqlite"};
#ifdef LEADER_CLI_JUDGE_REDIS
  out.emplace_back("redis");
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stores, Judge, ::testing::ValuesIn(judged_stores()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace leader::cli_test

namespace leader::cli_test {
namespace {

class GrantedTtl : public CliTest {};

// ZooKeeper caps the session (the lease) at the server's maxSessionTimeout: 30 s for the shared
// test server. A --grace that fits --ttl 60s but not the 30 s granted must be refused.
TEST_F(GrantedTtl, AGraceThatDoesNotFitTheGrantedTtlIsRefusedAndTheLockReleased) {
  std::string zk = "zk://127.0.0.1:12181";
  std::string lock = "granted-" + std::to_string(::getpid());
  std::string mark = "echo ran > " + path("ran");
  Finished refused = leader({"run", "--store", zk, "--lock", lock, "--ttl", "60s", "--grace", "20s",
                             "--", "sh", "-c", mark});
  if (refused.err.find("not built") != std::string::npos) GTEST_SKIP() << refused.err;
  EXPECT_EQ(refused.code, 64) << refused.err;
  EXPECT_THAT(refused.err, ::testing::HasSubstr("granted"));
  EXPECT_EQ(read_file(path("ran")), "") << "the command ran with a grace the lease cannot hold";
  Finished status = leader({"status", "--store", zk, "--lock", lock});
  EXPECT_EQ(status.code, 3) << "the refused lease was not released: " << status.out;
  Finished fits = leader({"run", "--store", zk, "--lock", lock, "--ttl", "60s", "--grace", "5s",
                          "--", "sh", "-c", mark});
  EXPECT_EQ(fits.code, 0) << fits.err;
  EXPECT_EQ(read_file(path("ran")), "ran\n");
}

}  // namespace
}  // namespace leader::cli_test
