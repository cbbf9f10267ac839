// Contract cases 3 (K concurrent callers, threads and processes) and 8 (kill -9 of a holder).

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "helpers.hpp"

namespace leader::contract {
namespace {

TEST_P(ContractTest, ConcurrentThreadsElectExactlyOneRunnerPerRound) {
  constexpr int kThreads = 6;
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    auto name = lock("-r" + std::to_string(round));
    std::atomic<int> attempts{0};
    std::atomic<int> runs{0};
    // Every contender's connection is open before the round starts: one opened during the round
    // (seen past a second on a loaded machine) could try after the holder's lease expired.
    std::vector<std::shared_ptr<LeaseStore>> stores;
    for (int t = 0; t < kThreads; ++t) stores.push_back(warmed(backend().open()));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, store = stores[t]] {
        try {
          LeaderElector e(store, quick(backend()));
          e.run_if_leader(name, [&] {
            ++runs;
            // Hold until every other thread has tried, so a late starter cannot win this round.
            eventually([&] { return attempts.load() >= kThreads - 1; }, Ms{10000});
          });
        } catch (const std::exception& ex) {
          ADD_FAILURE() << "thread failed: " << ex.what();
        }
        ++attempts;
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(runs.load(), 1) << "round " << round;
  }
}

struct LedgerEntry {
  std::uint64_t token;
  std::int64_t start, end;
  int pid;
};

TEST_P(ContractTest, ConcurrentProcessesNeverOverlapAndKeepTheCounterExact) {
  LEADER_CONTRACT_NEEDS(processes);
  auto name = lock();
  std::string base = "/tmp/leader-contract-" + std::to_string(getpid()) + "-" + name;
  std::string ledger = base + ".ledger", counter = base + ".counter";
  std::remove(ledger.c_str());
  std::remove(counter.c_str());
  constexpr int kProcs = 4;
  std::vector<std::unique_ptr<Child>> kids;
  for (int i = 0; i < kProcs; ++i)
    kids.push_back(std::make_unique<Child>(
        backend(),
        std::vector<std::string>{"contend", "--uri", backend().uri, "--lock", name, "--rounds",
                                 "12", "--hold-ms", "10", "--lease-ms",
                                 std::to_string((backend().lease_unit * 5).count()), "--wait-ms",
                                 std::to_string((backend().lease_unit * 2).count()), "--ledger",
                                 ledger, "--counter", counter}));
  long total = 0;
  for (auto& k : kids) {
    std::string line = k->read_line(Ms{120000});
    EXPECT_EQ(k->wait(), 0) << line;
    if (line.rfind("RUNS ", 0) == 0) total += std::stol(line.substr(5));
  }
  std::ifstream in(ledger);
  std::vector<LedgerEntry> entries;
  LedgerEntry e{};
  while (in >> e.token >> e.start >> e.end >> e.pid) entries.push_back(e);
  EXPECT_EQ(static_cast<long>(entries.size()), total);
  EXPECT_GT(total, 0);
  std::ifstream c(counter);
  long count = 0;
  c >> count;
  EXPECT_EQ(count, total) << "a lost update means two holders overlapped";
  std::sort(entries.begin(), entries.end(),
            [](const LedgerEntry& a, const LedgerEntry& b) { return a.start < b.start; });
  for (std::size_t i = 1; i < entries.size(); ++i) {
    EXPECT_LE(entries[i - 1].end, entries[i].start) << "overlap at " << i;
    EXPECT_GT(entries[i].token, entries[i - 1].token) << "token order at " << i;
  }
  std::remove(ledger.c_str());
  std::remove(counter.c_str());
}

TEST_P(ContractTest, AHolderKilledWithSigkillIsReplacedAfterLeaseTime) {
  LEADER_CONTRACT_NEEDS(processes);
  auto name = lock();
  const Ms lease = backend().lease_unit;
  Child holder(backend(), {"hold", "--uri", backend().uri, "--lock", name, "--lease-ms",
                           std::to_string(lease.count()), "--auto-extend"});
  std::string line = holder.read_line(Ms{30000});
  ASSERT_EQ(line.rfind("HELD ", 0), 0u) << line;
  // Held well beyond lease_time thanks to auto_extend.
  std::this_thread::sleep_for(lease * 3 / 2);
  LeaderElector probe(backend().open(), quick(backend()));
  EXPECT_FALSE(probe.run_if_leader(name, [] {}));
  holder.signal(SIGKILL);
  holder.wait();
  auto t0 = SteadyClock::now();
  LeaderElector waiter(backend().open(), quick(backend(), lease * 6));
  EXPECT_TRUE(waiter.run_if_leader(name, [] {}));
  EXPECT_LT(since(t0), lease * 6);
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(process)
