// N replica processes, one Scheduler each, under libfaketime wall-clock offsets (pairwise skew up
// to max_clock_skew), run a 1 s task on a real store for ~24 s: every instant ran exactly once
// (ledger lines with instant and fencing token), tokens increase with the instants, a replica
// SIGKILLed in the middle of a task is replaced at the next firing, and SIGTERM leaves the task's
// lock free on the store. The store comes from LEADER_SCHEDULER_STORE (see CMakeLists.txt).

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "leader/open.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

struct LedgerLine {
  bool start = false;
  long long instant = 0;
  std::uint64_t token = 0;
  std::string node;
};

std::vector<LedgerLine> read_ledger(const std::string& path) {
  std::vector<LedgerLine> out;
  std::ifstream in(path);
  std::string kind;
  LedgerLine l;
  while (in >> kind >> l.instant >> l.token >> l.node) {
    l.start = kind == "start";
    out.push_back(l);
  }
  return out;
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Cluster {
  std::string uri, task, trigger, ledger;
  std::vector<std::unique_ptr<ChildProcess>> replicas;
  std::vector<std::string> nodes;

  ChildProcess& start(const std::string& node, const std::string& offset) {
    std::vector<std::string> env = {"LD_PRELOAD=" + faketime_library(), "FAKETIME=" + offset,
                                    "DONT_FAKE_MONOTONIC=1", "FAKETIME_NO_CACHE=1"};
    replicas.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{LEADER_SCHEDULER_REPLICA, uri, task, trigger, "250", "800", "150",
                                 ledger, node},
        env));
    nodes.push_back(node);
    EXPECT_EQ(replicas.back()->read_line(10s), "ready") << node;
    return *replicas.back();
  }
};

// Waits until `node` has started a firing it has not ended; returns false after `limit`.
bool wait_mid_task(const std::string& ledger, const std::string& node, std::chrono::seconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    std::map<long long, int> open;
    for (const auto& l : read_ledger(ledger))
      if (l.node == node) open[l.instant] += l.start ? 1 : -1;
    for (const auto& [instant, n] : open)
      if (n > 0) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

void run_cluster(const std::string& trigger) {
  ASSERT_FALSE(faketime_library().empty()) << "libfaketime is not installed";
  Cluster c;
  c.uri = LEADER_SCHEDULER_STORE;
  c.task = "sched-it-" + std::to_string(::getpid()) + "-" + std::to_string(now_ms() % 100000);
  c.trigger = trigger;
  c.ledger = "/tmp/leader-sched-it-" + c.task + ".ledger";
  ::unlink(c.ledger.c_str());
  // Pairwise skews up to 250 ms (= max_clock_skew given to every replica).
  c.start("r0", "+0");
  c.start("r1", "+0.125");
  c.start("r2", "+0.25");  // the fastest clock: it attempts first and wins most firings
  long long begin = now_ms();
  std::this_thread::sleep_for(7s);
  ASSERT_TRUE(wait_mid_task(c.ledger, "r2", 5s));
  c.replicas[2]->signal(SIGKILL);
  long long killed_at = now_ms();
  c.replicas[2]->wait();
  c.start("r3", "+0.25");  // the replacement
  std::this_thread::sleep_for(15s);
  long long end = now_ms();
  for (std::size_t i = 0; i < c.replicas.size(); ++i) {
    if (i == 2) continue;
    c.replicas[i]->signal(SIGTERM);
    EXPECT_EQ(c.replicas[i]->wait(), 0) << c.nodes[i];
  }
  // Shutdown released everything: the lock is free on the store (a second client judges).
  auto store = leader::open(c.uri);
  EXPECT_FALSE(store->inspect(c.task, Deadline::after(5s)).held());

  std::map<long long, std::vector<LedgerLine>> runs;
  for (const auto& l : read_ledger(c.ledger))
    if (l.start) runs[l.instant].push_back(l);
  int checked = 0;
  std::uint64_t last_token = 0;
  for (const auto& [instant, lines] : runs) {
    EXPECT_EQ(lines.size(), 1u) << "instant " << instant << " ran " << lines.size() << " times";
    EXPECT_GT(lines.front().token, last_token) << "instant " << instant;
    last_token = lines.front().token;
  }
  // Every instant from 2 s after the start to 1 s before the end ran (exactly once, above).
  for (long long at = (begin / 1000 + 2) * 1000; at < end - 1000; at += 1000) {
    EXPECT_EQ(runs.count(at), 1u) << "instant " << at << " did not run";
    ++checked;
  }
  EXPECT_GE(checked, 20);
  // The killed replica's firing (started, never ended) was replaced at the next instant.
  long long killed_instant = 0;
  for (const auto& l : read_ledger(c.ledger))
    if (l.node == "r2") killed_instant = l.start ? l.instant : 0;
  ASSERT_NE(killed_instant, 0) << "r2 ended every firing it started";
  EXPECT_LE(killed_instant, killed_at + 1000);
  long long next = killed_instant + 1000;
  ASSERT_TRUE(runs.count(next)) << "no run at the instant after the kill";
  EXPECT_NE(runs[next].front().node, "r2");
  ::unlink(c.ledger.c_str());
}

TEST(SchedulerReplicas, FixedRateEachInstantRunsOnceUnderSkewedClocks) { run_cluster("rate:1000"); }

TEST(SchedulerReplicas, CronEachInstantRunsOnceUnderSkewedClocks) {
  if (std::string(LEADER_SCHEDULER_STORE).rfind("sqlite", 0) != 0)
    GTEST_SKIP() << "the cron variant runs on sqlite only (CI time)";
  run_cluster("cron:* * * * * *");
}

}  // namespace
}  // namespace leader::test
