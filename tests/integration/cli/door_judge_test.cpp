// The judged door scenarios (issue 37, "Every door, judged") through `leader cron` and `leader
// run`: a second client of the real store (the library, leader::open) decides who holds the lock.
//  - cron paused past its lease: the firing's command stops writing before the server lets the
//    judge in (judge_test.cpp has the same case for `leader run`);
//  - release frees at once: after `leader run` exits, and after a cron firing whose command ran
//    past the scheduler's hold, the judge's first attempt is granted;
//  - a release whose request is lost (a proxy swallows it, then drops the connection) still frees
//    the lock within the ttl while `leader cron` keeps running.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "cli_support.hpp"
#include "fault_proxy.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;
using Wall = std::chrono::system_clock;

std::int64_t wall_ns(Wall::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double ms_between(Wall::time_point from, Wall::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

LeaseRequest judge_request(const std::string& lock) {
  return LeaseRequest{.lock = lock,
                      .owner = "0123456789abcdef0123456789abcdef",
                      .node_id = "judge",
                      .ttl = 30s,
                      .slots = 0};
}

// The judge: a second client of the store that keeps calling try_acquire (wait 0) until the
// server lets it in, and records the send time of that call; it holds the lock until destroyed.
class Judge {
 public:
  Judge(const std::string& uri, std::string lock)
      : store_(leader::open(uri)), lock_(std::move(lock)), thread_([this] { poll(); }) {}
  ~Judge() {
    stop_ = true;
    thread_.join();
    if (lease_) (void)store_->release(*lease_, Duration{0}, Deadline::after(5s));
  }
  Judge(const Judge&) = delete;
  Judge& operator=(const Judge&) = delete;

  /// Waits up to `limit` for the grant; returns the send time of the granted attempt.
  std::optional<Wall::time_point> granted(std::chrono::seconds limit) {
    eventually([&] { return taken_.load(); }, limit);
    std::lock_guard lock(mu_);
    return taken_at_;
  }

 private:
  void poll() {
    const LeaseRequest request = judge_request(lock_);
    while (!stop_) {
      auto sent = Wall::now();
      try {
        Acquired got = store_->try_acquire(request, Deadline::after(2s));
        if (got) {
          std::lock_guard lock(mu_);
          lease_ = std::move(got.lease);
          taken_at_ = sent;
          taken_ = true;
          return;
        }
      } catch (const std::exception&) {
        // busy or unreachable for a moment: try again
      }
      std::this_thread::sleep_for(10ms);
    }
  }

  std::shared_ptr<LeaseStore> store_;
  std::string lock_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> taken_{false};
  std::mutex mu_;
  std::optional<Wall::time_point> taken_at_;
  std::optional<Lease> lease_;
  std::thread thread_;
};

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

  // The store URI of the parameter, through `endpoint` (the server itself or a proxy).
  std::string uri_via(const std::string& endpoint) const {
    if (GetParam() == "redis") return "redis://" + endpoint + "/0?prefix=cli-door-judge:";
    if (GetParam() == "etcd") return "etcd://" + endpoint + "?prefix=/leader-cli-door-judge";
    if (GetParam() == "postgres") return "postgresql://postgres@" + endpoint + "/leader_test";
    return store_;
  }

  // One try_acquire by a fresh second client; true when the server granted it (then released).
  bool first_attempt_granted() {
    auto store = leader::open(uri_);
    Acquired got = store->try_acquire(judge_request(lock_), Deadline::after(5s));
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

  static std::string writer(const std::string& file) {
    return "while :; do date +%s%N >> " + file + "; sleep 0.01; done";
  }

  std::vector<std::int64_t> writes(const std::string& file) {
    std::vector<std::int64_t> out;
    for (const auto& line : read_lines(path(file))) out.push_back(std::stoll(line));
    return out;
  }

  std::string lock_;
  std::string uri_;
};

TEST_P(DoorJudge, CronCommandStopsWritingBeforeTheServerGivesTheLockAwayWhileCronIsStopped) {
  Process cron = start_cron(uri_, {"--ttl", "2s"}, writer(path("w")));
  ASSERT_TRUE(eventually([&] { return writes("w").size() >= 5; }, 45s)) << cron.err();
  Judge judge(uri_, lock_);
  auto stopped_at = Wall::now();
  cron.signal(SIGSTOP);
  auto grant = judge.granted(30s);
  ASSERT_TRUE(grant) << "the server never let the judge in";
  std::this_thread::sleep_for(1s);  // a write after the grant would show up by now
  auto all = writes("w");
  std::int64_t last = *std::max_element(all.begin(), all.end());
  EXPECT_LT(last, wall_ns(*grant))
      << "the firing's command wrote " << (last - wall_ns(*grant)) / 1'000'000
      << " ms after the server gave the lock to the judge";
  EXPECT_GT(last, wall_ns(stopped_at)) << "vacuous: nothing ran while cron was stopped";
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
               "-c", writer(path("w"))},
              dir_);
  ASSERT_TRUE(eventually([&] { return writes("w").size() >= 5; }, 20s)) << run.err();
  Judge judge(uri_, lock_);
  auto stopped_at = Wall::now();
  run.signal(SIGSTOP);
  auto grant = judge.granted(30s);
  ASSERT_TRUE(grant) << "the server never let the judge in";
  std::this_thread::sleep_for(1s);  // a write after the grant would show up by now
  auto all = writes("w");
  std::int64_t last = *std::max_element(all.begin(), all.end());
  EXPECT_LT(last, wall_ns(*grant)) << "the command wrote " << (last - wall_ns(*grant)) / 1'000'000
                                   << " ms after the server gave the lock to the judge";
  EXPECT_GT(last, wall_ns(stopped_at)) << "vacuous: nothing ran while leader run was stopped";
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
  test::FaultProxy proxy("127.0.0.1", server_port());
  // The command outlives the scheduler's hold (5.2 s after the instant), then waits for "go".
  Process cron = start_cron(uri_via(proxy.endpoint()), {"--ttl", "2s"},
                            "sleep 6; touch " + path("past") + "; while [ ! -e " + path("go") +
                                " ]; do sleep 0.01; done");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(path("past")); }, 45s)) << cron.err();
  Judge judge(uri_, lock_);
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
  return out;
}

INSTANTIATE_TEST_SUITE_P(Stores, DoorJudge, ::testing::ValuesIn(judged_stores()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace leader::cli_test
