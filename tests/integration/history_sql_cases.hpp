#pragma once
// The cases every SQL history sink passes (sqlite, postgres, mysql): one row per record with its
// columns, retention by count and by age, and the asynchronous feed from an elector on the store.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "leader/leader.hpp"

namespace leader::testing {

/// Runs one single-value SQL query against the store's database ("" when there is no row).
using QueryOne = std::function<std::string(const std::string& sql)>;

inline HistoryRecord history_sample(std::uint64_t token, WallTime ended) {
  return {.lock = "hist-lock",
          .node_id = "hist-node",
          .fencing_token = token,
          .slot = 1,
          .started = ended - std::chrono::seconds(2),
          .ended = ended,
          .outcome = LeaseOutcome::completed};
}

/// `uri` names the store with `table_prefix=<prefix>`; the table is `<prefix>history`.
inline void check_sql_history(const std::string& uri, const std::string& prefix,
                              const QueryOne& query) {
  using namespace std::chrono_literals;
  const std::string table = prefix + "history";
  const auto now = std::chrono::system_clock::now();
  auto count = [&](const std::string& where = "1=1") {
    return query("SELECT count(*) FROM " + table + " WHERE " + where);
  };

  auto sink = open_history(uri);
  sink->record(history_sample(11, now));
  sink->record(history_sample(12, now));
  HistoryRecord failed = history_sample(13, now);
  failed.outcome = LeaseOutcome::failed;
  failed.error = "boom";
  sink->record(failed);
  EXPECT_EQ(count(), "3");
  EXPECT_EQ(query("SELECT outcome FROM " + table + " WHERE fencing_token = 13"), "failed");
  EXPECT_EQ(query("SELECT error FROM " + table + " WHERE fencing_token = 13"), "boom");
  EXPECT_EQ(query("SELECT node_id FROM " + table + " WHERE fencing_token = 11"), "hist-node");
  EXPECT_EQ(count("slot = 1 AND lock_name = 'hist-lock' AND ended_at > started_at"), "3");

  auto by_count = open_history(uri, {.max_records = 2, .prune_interval = 0ms});
  by_count->record(history_sample(14, now));
  by_count->record(history_sample(15, now));
  EXPECT_EQ(count(), "2");
  EXPECT_EQ(query("SELECT min(fencing_token) FROM " + table), "14");

  auto by_age = open_history(uri, {.max_age = 1h, .prune_interval = 0ms});
  by_age->record(history_sample(16, now - 3h));  // written, then pruned by the same call
  by_age->record(history_sample(17, now));
  EXPECT_EQ(count(), "3");
  EXPECT_EQ(count("fencing_token = 16"), "0");

  auto store = open(uri);
  LeaderElector elector(store, {.wait_time = 0s, .lease_time = 10s}, {.history = sink});
  EXPECT_TRUE(elector.run_if_leader("hist-feed", [] {}));
  EXPECT_THROW(elector.run_if_leader("hist-feed", [] { throw std::runtime_error("feed"); }),
               std::runtime_error);
  for (int i = 0; i < 500 && count("lock_name = 'hist-feed'") != "2"; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(count("lock_name = 'hist-feed'"), "2");
  EXPECT_EQ(count("lock_name = 'hist-feed' AND outcome = 'failed' AND error = 'feed'"), "1");
}

}  // namespace leader::testing
