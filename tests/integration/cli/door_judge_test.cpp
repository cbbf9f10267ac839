// The judged door scenarios through `leader cron` and `leader
// run`: a second client of the real store (the library, leader::open) decides who holds the lock.
//  - cron paused past its lease: the firing's command stops writing before the server lets the
//    judge in (judge_test.cpp has the same case for `leader run`);
//  - release frees at once: after `leader run` exits, and after a cron firing whose command ran
//    past the scheduler's hold, the judge's first attempt is granted;
//  - a release whose request is lost (a proxy swallows it, then drops the connection) still frees
//    the lock within the ttl while `leader cron` keeps running.

#include <signal.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli_support.hpp"
#include "fault_proxy.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"
#include "second_client.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;
class DoorJudge : public CliTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    lock_ = "door-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(lock_.begin(), lock_.end(), '/', '-');
    uri_ = uri_via("127.0.0.1:" + std::to_string(server_port()));
  }

  // The port of the shared server of the parameter (0 for SQLite).
  int server_port() const {
    if (GetParam() == "redis") return 16379;
    if (GetParam() == "etcd") return 12379;
    if (GetParam() == "postgres") return 15432;
    return 0;
  }

  // The store URI of the parameter, through `endpoint` (the server itself or a proxy). The
  // clustered topologies (scripts/cluster-servers.sh, redis-sentinel.sh, redis-cluster.sh) are
  // reached at all their members, never through one proxy.
  std::string uri_via(const std::string& endpoint) const {
    if (GetParam() == "redis") return "redis://" + endpoint + "/0?prefix=cli-door-judge:";
    if (GetParam() == "etcd") return "etcd://" + endpoint + "?prefix=/leader-cli-door-judge";
    if (GetParam() == "postgres") return "postgresql://postgres@" + endpoint + "/leader_test";
    if (GetParam() == "redis_sentinel")
      return "redis-sentinel://127.0.0.1:22610,127.0.0.1:22611,127.0.0.1:22612/"
             "leader-test?prefix=cli-door-judge:";
    if (GetParam() == "redis_cluster")
      return "redis-cluster://127.0.0.1:22700,127.0.0.1:22701,127.0.0.1:22702"
             "?prefix=cli-door-judge:";
    if (GetParam() == "etcd_cluster")
      return "etcd://127.0.0.1:22379,127.0.0.1:22381,127.0.0.1:22383"
             "?prefix=/leader-cli-door-judge";
    if (GetParam() == "zookeeper_ensemble")
      return "zk://127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183?session_timeout=auto";
    return store_;
  }

  // One try_acquire by a fresh second client; true when the server granted it (then released).
  bool first_attempt_granted() {
    auto store = leader::open(uri_);
    Acquired got = store->try_acquire(second_client_request(lock_), Deadline::after(5s));
    if (!got) return false;
    (void)store->release(*got.lease, Duration{0}, Deadline::after(5s));
    return true;
  }

  // `leader cron` firing every 20 s, first at a second about 3 s from now, on `uri`: a firing's
  // command of 6 s or so ends well before the next instant, and a cron that starts late on a
  // loaded machine still fires within 20 s.
  Process start_cron(const std::string& uri, const std::vector<std::string>& options,
                     const std::string& script) {
    const auto first = (std::time(nullptr) + 3) % 20;
    std::string seconds;
    for (auto at = first; at < 60; at += 20)
      seconds += (seconds.empty() ? "" : ",") + std::to_string(at);
    std::vector<std::string> argv = {
        leader_binary(),    "cron", "--store",    uri,
        "--lock",           lock_,  "--schedule", seconds + " * * * * *",
        "--max-clock-skew", "200ms"};
    argv.insert(argv.end(), options.begin(), options.end());
    for (const auto& word : std::vector<std::string>{"--", "sh", "-c", script})
      argv.push_back(word);
    return Process(argv, dir_);
  }

  std::string lock_;
  std::string uri_;
};

TEST_P(DoorJudge, CronCommandStopsWritingBeforeTheServerGivesTheLockAwayWhileCronIsStopped) {
  Process cron = start_cron(uri_, {"--ttl", "2s"}, timestamp_writer(path("w")));
  ASSERT_TRUE(eventually([&] { return timestamps(path("w")).size() >= 5; }, 45s)) << cron.err();
  SecondClient judge(uri_, lock_);
  auto stopped_at = Wall::now();
  cron.signal(SIGSTOP);
  expect_no_write_after_grant(judge, path("w"), stopped_at, "leader cron");
  cron.signal(SIGCONT);
  EXPECT_TRUE(eventually([&] {
    return cron.err().find("firing") != std::string::npos &&
           cron.err().find("ran here") != std::string::npos;
  })) << cron.err();
  EXPECT_TRUE(process_running(cron.pid())) << "cron ended with its firing: " << cron.err();
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
}

TEST_P(DoorJudge, RunCommandStopsWritingBeforeTheServerGivesTheLockAwayWhileRunIsStopped) {
  if (GetParam() == "sqlite" || GetParam() == "redis")
    GTEST_SKIP() << "judge_test.cpp (Judge.*) has this case on " << GetParam();
  Process run({leader_binary(), "run", "--store", uri_, "--lock", lock_, "--ttl", "2s", "--", "sh",
               "-c", timestamp_writer(path("w"))},
              dir_);
  ASSERT_TRUE(eventually([&] { return timestamps(path("w")).size() >= 5; }, 20s)) << run.err();
  SecondClient judge(uri_, lock_);
  auto stopped_at = Wall::now();
  run.signal(SIGSTOP);
  expect_no_write_after_grant(judge, path("w"), stopped_at, "leader run");
  run.signal(SIGCONT);
  EXPECT_EQ(run.wait(), 75) << run.err();
}

TEST_P(DoorJudge, RunReleaseFreesTheLockForTheJudgesFirstAttempt) {
  Process run(
      {leader_binary(), "run", "--store", uri_, "--lock", lock_, "--ttl", "30s", "--", "true"},
      dir_);
  ASSERT_EQ(run.wait(), 0) << run.err();
  EXPECT_TRUE(first_attempt_granted()) << "the lock was still held after leader run exited";
}

TEST_P(DoorJudge, CronReleaseAfterACommandPastItsHoldFreesTheLockForTheJudgesFirstAttempt) {
  // The scheduler holds a firing's lock until instant + window (5 s) + skew; a command that runs
  // past that has its lease released as soon as it ends, before the firing is logged (the next
  // instant is 14 s later).
  Process cron = start_cron(uri_, {"--ttl", "30s"}, "sleep 6");
  ASSERT_TRUE(eventually([&] { return cron.err().find("ran here") != std::string::npos; }, 45s))
      << cron.err();
  EXPECT_TRUE(first_attempt_granted())
      << "the lock was still held after the firing: " << cron.err();
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
}

TEST_P(DoorJudge, CronLostReleaseFreesTheLockWithinTheTtlWhileCronRuns) {
  if (GetParam() == "sqlite") GTEST_SKIP() << "no network between leader and a SQLite file";
  if (server_port() == 0)
    GTEST_SKIP() << "one proxy cannot stand for every member of " << GetParam()
                 << " (the library's EtcdLostRelease/ZooKeeperLostRelease cases cover sessions)";
  test::FaultProxy proxy("127.0.0.1", server_port());
  // The command outlives the scheduler's hold (5.2 s after the instant), then waits for "go".
  Process cron = start_cron(uri_via(proxy.endpoint()), {"--ttl", "2s"},
                            "sleep 6; touch " + path("past") + "; while [ ! -e " + path("go") +
                                " ]; do sleep 0.01; done");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(path("past")); }, 45s)) << cron.err();
  SecondClient judge(uri_, lock_);
  std::this_thread::sleep_for(1s);  // renewals go on through the proxy
  proxy.set_mode(test::FaultProxy::Mode::blackhole);
  auto lost_from = Wall::now();  // no renewal is confirmed after this
  { std::ofstream(path("go")) << "go\n"; }
  auto grant = judge.granted(15s);
  ASSERT_TRUE(grant) << "the lock was still held 15 s after the release was swallowed: "
                     << cron.err();
  EXPECT_LT(ms_between(lost_from, *grant), 2000 + 3000)
      << "the judge was granted " << ms_between(lost_from, *grant)
      << " ms after the last possible renewal (ttl 2 s)";
  EXPECT_GT(proxy.dropped_requests(), 0u) << "vacuous: the proxy swallowed nothing";
  proxy.set_mode(test::FaultProxy::Mode::forward);
  proxy.cut_silenced();
  EXPECT_TRUE(process_running(cron.pid())) << "cron ended: " << cron.err();
  std::cerr << "judge granted " << ms_between(lost_from, *grant)
            << " ms after the release was swallowed (ttl 2 s)\n";
  cron.signal(SIGTERM);
  EXPECT_EQ(cron.wait(), 0) << cron.err();
}

std::vector<std::string> judged_stores() {
  std::vector<std::string> out = {"sqlite"};
#ifdef LEADER_CLI_DOOR_JUDGE_REDIS
  out.emplace_back("redis");
#endif
#ifdef LEADER_CLI_DOOR_JUDGE_ETCD
  out.emplace_back("etcd");
#endif
#ifdef LEADER_CLI_DOOR_JUDGE_POSTGRES
  out.emplace_back("postgres");
#endif
#ifdef LEADER_CLI_DOOR_JUDGE_TOPOLOGIES  // the clustered topologies, each under its own lock
#ifdef LEADER_CLI_DOOR_JUDGE_REDIS
  out.emplace_back("redis_sentinel");
  out.emplace_back("redis_cluster");
#endif
#ifdef LEADER_CLI_DOOR_JUDGE_ETCD
  out.emplace_back("etcd_cluster");
#endif
#ifdef LEADER_CLI_DOOR_JUDGE_ZOOKEEPER
  out.emplace_back("zookeeper_ensemble");
#endif
#endif
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stores, DoorJudge, ::testing::ValuesIn(judged_stores()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace leader::cli_test
