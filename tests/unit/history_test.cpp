// History sinks of leader::core (memory ring, JSON Lines), retention, open_history, and the
// asynchronous feed: a failing or blocked sink never fails or delays an election.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

template <class Pred>
bool eventually(Pred p) {
  for (int i = 0; i < 2000 && !p(); ++i) std::this_thread::sleep_for(1ms);
  return p();
}

HistoryRecord sample(std::uint64_t token, WallTime ended = std::chrono::system_clock::now()) {
  return {.lock = "job",
          .node_id = "node-a",
          .fencing_token = token,
          .slot = 0,
          .started = ended - 1s,
          .ended = ended,
          .outcome = LeaseOutcome::completed};
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

struct TempFile {
  std::string path = "/tmp/leader-history-test-" + std::to_string(::getpid()) + "-" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) +
                     ".jsonl";
  ~TempFile() { std::filesystem::remove(path); }
};

TEST(MemoryHistory, KeepsTheNewestRecordsOfItsCapacity) {
  MemoryHistory ring(3);
  for (std::uint64_t t = 1; t <= 5; ++t) ring.record(sample(t));
  auto kept = ring.records();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().fencing_token, 3u);
  EXPECT_EQ(kept.back().fencing_token, 5u);
  EXPECT_EQ(ring.evicted(), 2u);
  EXPECT_THROW(MemoryHistory(0), InvalidArgument);
}

TEST(JsonLinesHistory, WritesOneObjectPerLine) {
  TempFile f;
  JsonLinesHistory sink(f.path);
  HistoryRecord r = sample(42, WallTime{} + 1'700'000'000'123ms);
  r.outcome = LeaseOutcome::failed;
  r.error = "bad \"quote\"\nnext";
  sink.record(r);
  auto lines = lines_of(f.path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "{\"lock\":\"job\",\"node_id\":\"node-a\",\"fencing_token\":42,\"slot\":0,"
            "\"started\":\"2023-11-14T22:13:19.123Z\",\"ended\":\"2023-11-14T22:13:20.123Z\","
            "\"started_ms\":1699999999123,\"ended_ms\":1700000000123,\"outcome\":\"failed\","
            "\"error\":\"bad \\\"quote\\\"\\nnext\",\"fail_open\":false}");
}

TEST(JsonLinesHistory, RetentionKeepsTheNewestRecords) {
  TempFile f;
  JsonLinesHistory sink(f.path, {.max_records = 3, .prune_interval = 0ms});
  for (std::uint64_t t = 1; t <= 7; ++t) sink.record(sample(t));
  auto lines = lines_of(f.path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("\"fencing_token\":5,"), std::string::npos);
  EXPECT_NE(lines[2].find("\"fencing_token\":7,"), std::string::npos);
}

TEST(JsonLinesHistory, RetentionDropsRecordsOlderThanMaxAge) {
  TempFile f;
  const auto now = std::chrono::system_clock::now();
  {
    JsonLinesHistory old_writer(f.path);
    old_writer.record(sample(1, now - 3h));
    old_writer.record(sample(2, now - 2h));
  }
  JsonLinesHistory sink(f.path, {.max_age = 1h, .prune_interval = 0ms});
  sink.record(sample(3, now));
  auto lines = lines_of(f.path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("\"fencing_token\":3,"), std::string::npos);
}

TEST(OpenHistory, KnowsMemoryAndJsonLinesAndRefusesUnknownSchemes) {
  TempFile f;
  auto ring = open_history("memory:?capacity=2");
  ASSERT_NE(std::dynamic_pointer_cast<MemoryHistory>(ring), nullptr);
  auto file = open_history("jsonl:" + f.path);
  file->record(sample(1));
  EXPECT_EQ(lines_of(f.path).size(), 1u);
  EXPECT_THROW(open_history("memory:?capacity=0"), InvalidArgument);
  EXPECT_THROW(open_history("nosuch://x"), InvalidArgument);
  EXPECT_THROW(open_history("memory:", {.max_age = -1ms}), InvalidArgument);
}

struct World {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store = make_memory_store({.clock = clock});
};

TEST(HistoryFeed, OneRecordPerAcquisitionWithItsOutcome) {
  World w;
  auto ring = std::make_shared<MemoryHistory>();
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 10s},
                  {.clock = w.clock, .history = ring});
  EXPECT_TRUE(e.run_if_leader("done", [] {}));
  EXPECT_THROW(
      e.run_if_leader("fails", [] { throw std::runtime_error("see redis://u:pw@host:1/0"); }),
      std::runtime_error);
  {
    auto held = e.acquire("expires");
    ASSERT_TRUE(held);
    w.clock->advance(9s);  // past the local deadline (10 s - 2 s)
    ASSERT_TRUE(eventually([&] { return held.guard->context().stop_token().stop_requested(); }));
  }
  ASSERT_TRUE(eventually([&] { return ring->records().size() == 3; }));
  auto r = ring->records();
  EXPECT_EQ(r[0].lock, "done");
  EXPECT_EQ(r[0].outcome, LeaseOutcome::completed);
  EXPECT_GT(r[0].fencing_token, 0u);
  EXPECT_LE(r[0].started, r[0].ended);
  EXPECT_EQ(r[1].outcome, LeaseOutcome::failed);
  EXPECT_EQ(r[1].error.find("pw"), std::string::npos) << r[1].error;
  EXPECT_EQ(r[2].outcome, LeaseOutcome::expired);
  EXPECT_NE(r[2].error.find("local deadline"), std::string::npos);
}

// Blocks every write until released; counts them.
struct BlockedSink : HistorySink {
  std::promise<void> gate;
  std::shared_future<void> open = gate.get_future().share();
  std::atomic<int> writes{0};
  void record(const HistoryRecord&) override {
    open.wait();
    ++writes;
  }
};

TEST(HistoryFeed, ABlockedOrFailingSinkNeverDelaysOrFailsAnElection) {
  World w;
  auto blocked = std::make_shared<BlockedSink>();
  auto bus = std::make_shared<EventBus>();
  LeaderElector e(w.store, {.wait_time = 0s, .lease_time = 10s},
                  {.clock = w.clock, .history = blocked, .events = bus});
  struct Failing : HistorySink {
    void record(const HistoryRecord&) override {
      throw BackendError(ErrorCode::unavailable, "x", "down");
    }
  };
  auto failing = attach_history(*bus, std::make_shared<Failing>(), {.queue_capacity = 4});
  // The blocked sink holds its first record; every election still completes at once.
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(e.run_if_leader("job", [] {}));
  ASSERT_TRUE(failing.wait_idle(5s));
  EXPECT_EQ(failing.failures() + failing.dropped(), 50u);
  EXPECT_EQ(blocked->writes.load(), 0);
  blocked->gate.set_value();
  ASSERT_TRUE(eventually([&] { return blocked->writes.load() == 50; }));
  EXPECT_EQ(e.history_feed().failures() + e.history_feed().dropped(), 0u);
  EXPECT_TRUE(e.history_feed().active());
}

}  // namespace
}  // namespace leader
