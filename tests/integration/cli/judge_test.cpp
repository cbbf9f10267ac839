// "The server is the judge" for `leader run` (DESIGN section 5): while `leader` itself is stopped
// (SIGSTOP), flooded with SIGTERM, or sent SIGTSTP, a second client keeps calling try_acquire on
// the real store. The command's last write must come before the send time of that client's first
// successful acquisition, whatever leader's own arithmetic says.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>

#include "cli_support.hpp"
#include "leader/open.hpp"
#include "leader/store.hpp"

namespace leader::cli_test {
namespace {

using namespace std::chrono_literals;
using Wall = std::chrono::system_clock;

// Nanoseconds since the epoch on the wall clock, as `date +%s%N` prints them.
std::int64_t wall_ns(Wall::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// A second client of the store: keeps calling try_acquire (wait 0) until the server lets it in,
// and records the send time of that successful call.
class Observer {
 public:
  Observer(const std::string& uri, std::string lock)
      : store_(leader::open(uri)), lock_(std::move(lock)), thread_([this] { poll(); }) {}
  ~Observer() {
    stop_ = true;
    thread_.join();
    if (lease_) (void)store_->release(*lease_, Duration{0}, Deadline::after(5s));
  }
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  /// Waits up to `limit` for the takeover; returns the send time of the successful acquire.
  std::optional<Wall::time_point> takeover(std::chrono::seconds limit) {
    eventually([&] { return taken_.load(); }, limit);
    std::lock_guard lock(mu_);
    return taken_at_;
  }
  /// Takeovers so far (0 or 1).
  [[nodiscard]] bool taken() const { return taken_.load(); }

 private:
  void poll() {
    LeaseRequest request{.lock = lock_,
                         .owner = "0123456789abcdef0123456789abcdef",
                         .node_id = "observer",
                         .ttl = 30s,
                         .slots = 0};
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

  // A shell loop that appends `date +%s%N` to `file` every 10 ms.
  static std::string writer(const std::string& file) {
    return "while :; do date +%s%N >> " + file + "; sleep 0.01; done";
  }

  // The timestamps written so far.
  std::vector<std::int64_t> writes(const std::string& file) {
    std::vector<std::int64_t> out;
    for (const auto& line : read_lines(path(file))) out.push_back(std::stoll(line));
    return out;
  }

  void wait_for_writes(const std::string& file) {
    ASSERT_TRUE(eventually([&] { return writes(file).size() >= 5; })) << "the command never wrote";
  }

  // The judgement: every write happened before the server let the observer in.
  void expect_no_write_after_takeover(Observer& observer, const std::string& file,
                                      Wall::time_point disturbed_at) {
    auto takeover = observer.takeover(30s);
    ASSERT_TRUE(takeover) << "the server never let the observer in";
    std::this_thread::sleep_for(1s);  // a write after the takeover would show up by now
    auto all = writes(file);
    ASSERT_FALSE(all.empty());
    std::int64_t last = *std::max_element(all.begin(), all.end());
    EXPECT_LT(last, wall_ns(*takeover))
        << "the command wrote " << (last - wall_ns(*takeover)) / 1'000'000
        << " ms after the server gave the lock to another client";
    EXPECT_GT(last, wall_ns(disturbed_at)) << "vacuous: nothing ran while leader was disturbed";
  }

  std::string lock_;
  std::string uri_;
};

TEST_P(Judge, CommandStopsWritingBeforeTheServerGivesTheLockAwayWhileLeaderIsStopped) {
  Process holder = start({"--ttl", "2s"}, sh(writer(path("w"))));
  wait_for_writes("w");
  Observer observer(uri_, lock_);
  auto stopped_at = Wall::now();
  holder.signal(SIGSTOP);
  expect_no_write_after_takeover(observer, "w", stopped_at);
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(), 75) << holder.err();
  EXPECT_THAT(holder.err(), ::testing::HasSubstr("lost"));
}

TEST_P(Judge, ADoubleForkedSetsidWriterIsKilledToo) {
  Process holder = start({"--ttl", "2s"}, sh("setsid -f sh -c '" + writer(path("w")) +
                                             "' < /dev/null > /dev/null 2>&1; exec sleep 300"));
  wait_for_writes("w");
  Observer observer(uri_, lock_);
  auto stopped_at = Wall::now();
  holder.signal(SIGSTOP);
  expect_no_write_after_takeover(observer, "w", stopped_at);
  holder.signal(SIGCONT);
  EXPECT_EQ(holder.wait(), 75) << holder.err();
}

TEST_P(Judge, ASigtermStormEscalatesToSigkillAfterGraceAndOnlyThenReleases) {
  // The command ignores SIGTERM and SIGINT; only the escalation to SIGKILL can end it.
  Process holder =
      start({"--ttl", "10s", "--grace", "1s"}, sh("trap '' TERM INT; " + writer(path("w"))));
  wait_for_writes("w");
  Observer observer(uri_, lock_);
  auto storm_at = Wall::now();
  for (int i = 0; i < 20; ++i) {
    holder.signal(i % 2 == 0 ? SIGTERM : SIGINT);
    std::this_thread::sleep_for(20ms);
  }
  expect_no_write_after_takeover(observer, "w", storm_at);
  EXPECT_EQ(holder.wait(), 128 + SIGKILL) << holder.err();
}

TEST_P(Judge, SigtstpDoesNotSuspendLeaderOrItsLease) {
  Process holder = start({"--ttl", "2s"}, sh(writer(path("w"))));
  wait_for_writes("w");
  Observer observer(uri_, lock_);
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
