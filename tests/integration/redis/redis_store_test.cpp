// Store-level cases against the shared redis-server (scripts/test-servers.sh, port 16379).

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "leader/stores/redis.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

class RedisStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = admin();
    if (!db_)
      GTEST_FAIL() << "no redis at " << redis_uri() << " (scripts/test-servers.sh start redis)";
    store_ = leader::open(redis_uri());
  }
  LeaseRequest request(const std::string& lock, Duration ttl = 5s, int slots = 0) {
    return LeaseRequest{lock, new_owner_token(), "node-" + std::to_string(::getpid()), ttl, slots};
  }
  Admin db_;
  std::shared_ptr<LeaseStore> store_;
};

TEST_F(RedisStoreTest, AcquireInspectRenewReleaseRoundTrip) {
  auto lock = unique_lock("round");
  auto got = store_->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  EXPECT_GT(lease.fencing_token, 0u);
  EXPECT_EQ(lease.slot, 0);
  auto state = store_->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, lease.owner);
  EXPECT_EQ(state.holders[0].node_id, lease.node_id);
  EXPECT_EQ(state.holders[0].fencing_token, lease.fencing_token);
  EXPECT_GT(state.holders[0].expires_in, 0ms);
  EXPECT_LE(state.holders[0].expires_in, 5s);
  const Renewal renewal = store_->renew(lease, 7s, soon());
  EXPECT_EQ(renewal.status, LeaseStatus::ok);
  EXPECT_EQ(renewal.ttl, 7s);
  EXPECT_GT(store_->inspect(lock, soon()).holders.at(0).expires_in, 5s);
  EXPECT_EQ(store_->release(lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_FALSE(store_->inspect(lock, soon()).held());
  EXPECT_EQ(store_->release(lease, 0ms, soon()), LeaseStatus::lost);  // twice: no throw
}

TEST_F(RedisStoreTest, ContentionIsAnEmptyResult) {
  auto lock = unique_lock("busy");
  auto first = store_->try_acquire(request(lock), soon());
  ASSERT_TRUE(first);
  auto other = leader::open(redis_uri());
  EXPECT_FALSE(other->try_acquire(request(lock), soon()));
  (void)store_->release(*first.lease, 0ms, soon());
  EXPECT_TRUE(other->try_acquire(request(lock), soon()));
}

TEST_F(RedisStoreTest, FencingTokensIncreaseEvenWhenTheCounterIsLost) {
  auto lock = unique_lock("fence");
  std::uint64_t last = 0;
  for (int i = 0; i < 5; ++i) {
    auto s = leader::open(redis_uri());  // a new client each time
    auto got = s->try_acquire(request(lock), soon());
    ASSERT_TRUE(got);
    EXPECT_GT(got.lease->fencing_token, last);
    last = got.lease->fencing_token;
    (void)s->release(*got.lease, 0ms, soon());
    if (i == 2) {  // what a restart without persistence or an eviction does to the counter
      auto key = "{leader:" + lock + "}:fence";
      run(db_.get(), "DEL %s", key.c_str());
    }
  }
}

TEST_F(RedisStoreTest, PlainSetNxHolderExcludesUsAndShowsAsUnknown) {
  auto lock = unique_lock("foreign");
  auto key = "leader:" + lock;
  auto r = run(db_.get(), "SET %s %s NX PX 5000", key.c_str(), "some-other-client");
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  EXPECT_FALSE(store_->try_acquire(request(lock), soon()));
  auto state = store_->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "unknown");
  EXPECT_EQ(state.holders[0].owner, "");
  EXPECT_GT(state.holders[0].expires_in, 0ms);
  run(db_.get(), "DEL %s", key.c_str());
  auto ours = store_->try_acquire(request(lock), soon());
  ASSERT_TRUE(ours);
  auto nx = run(db_.get(), "SET %s %s NX PX 5000", key.c_str(), "some-other-client");
  EXPECT_EQ(nx->type, REDIS_REPLY_NIL);  // our lease excludes a plain SET NX
}

TEST_F(RedisStoreTest, RedisPyLockAndOurLeaseExcludeEachOther) {
  if (std::system("/usr/bin/python3 -c 'import redis' 2>/dev/null") != 0)
    GTEST_SKIP() << "Debian's python3-redis is not installed";
  auto lock = unique_lock("redispy");
  auto py = [&](const std::string& body) {
    std::string cmd =
        "/usr/bin/python3 -c \"import redis,sys; r=redis.Redis(port=16379); "
        "l=r.lock('leader:" +
        lock + "', timeout=5); " + body + "\"";
    return std::system(cmd.c_str());
  };
  ASSERT_EQ(py("sys.exit(0 if l.acquire(blocking=False) else 1)"), 0);
  EXPECT_FALSE(store_->try_acquire(request(lock), soon()));
  EXPECT_EQ(store_->inspect(lock, soon()).holders.at(0).node_id, "unknown");
  run(db_.get(), "DEL leader:%s", lock.c_str());
  auto ours = store_->try_acquire(request(lock), soon());
  ASSERT_TRUE(ours);
  EXPECT_NE(py("sys.exit(0 if l.acquire(blocking=False) else 1)"), 0);
}

TEST_F(RedisStoreTest, ReleaseWithKeepForHoldsUntilThen) {
  auto lock = unique_lock("keep");
  auto got = store_->try_acquire(request(lock, 10s), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(store_->release(*got.lease, 300ms, soon()), LeaseStatus::ok);
  auto state = store_->inspect(lock, soon());
  ASSERT_TRUE(state.held());
  EXPECT_LE(state.holders[0].expires_in, 300ms);
  EXPECT_FALSE(store_->try_acquire(request(lock), soon()));
  std::this_thread::sleep_for(450ms);
  EXPECT_TRUE(store_->try_acquire(request(lock), soon()));
}

TEST_F(RedisStoreTest, GroupSlotsFreeUpWhenHoldersExpire) {
  auto lock = unique_lock("group-expiry");
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(store_->try_acquire(request(lock, 100ms, 2), soon()));
  EXPECT_FALSE(store_->try_acquire(request(lock, 100ms, 2), soon()));
  std::this_thread::sleep_for(250ms);
  EXPECT_TRUE(store_->try_acquire(request(lock, 5s, 2), soon()));
  EXPECT_TRUE(store_->try_acquire(request(lock, 5s, 2), soon()));
}

TEST_F(RedisStoreTest, GroupOfOneUsesTheSingleLeaseKeyButIsAnotherSize) {
  auto lock = unique_lock("group-one");
  ASSERT_TRUE(store_->try_acquire(request(lock, 5s, 1), soon()));
  EXPECT_FALSE(store_->try_acquire(request(lock, 5s, 1), soon()));
  try {
    (void)store_->try_acquire(request(lock, 5s, 0), soon());
    ADD_FAILURE() << "a single-leader request got past a group of 1";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  }
  EXPECT_EQ(run(db_.get(), "EXISTS leader:%s", lock.c_str())->integer, 1);
}

TEST_F(RedisStoreTest, ScriptCacheFlushFallsBackToEval) {
  auto lock = unique_lock("noscript");
  ASSERT_TRUE(store_->try_acquire(request(lock), soon()));
  run(db_.get(), "SCRIPT FLUSH");
  auto got = store_->try_acquire(request(lock + "-2"), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(store_->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
}

TEST_F(RedisStoreTest, ManyThreadsShareOneStoreAndNeverOverlap) {
  auto lock = unique_lock("threads");
  std::atomic<int> inside{0}, overlaps{0}, wins{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        auto got = store_->try_acquire(request(lock), soon());
        if (!got) continue;
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        wins.fetch_add(1);
        inside.fetch_sub(1);
        (void)store_->release(*got.lease, 0ms, soon());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(wins.load(), 0);
  EXPECT_LE(redis_pool_stats(*store_).open_connections, redis_pool_stats(*store_).pool_size);
}

TEST_F(RedisStoreTest, CandidatesRoundTripAndExpire) {
  auto group = unique_lock("cands");
  Candidate a{"node-a", {}, 3, 1, std::chrono::system_clock::now(), {{"zone", "eu west&1=%"}}};
  Candidate b{"node-b", {}, 0, 0, std::nullopt, {}};
  store_->put_candidate(group, a, 5s, soon());
  store_->put_candidate(group, b, 150ms, soon());
  auto list = store_->list_candidates(group, soon());
  ASSERT_EQ(list.size(), 2u);
  std::sort(list.begin(), list.end(), [](auto& x, auto& y) { return x.node_id < y.node_id; });
  EXPECT_EQ(list[0].successes, 3u);
  EXPECT_EQ(list[0].failures, 1u);
  ASSERT_TRUE(list[0].last_completion.has_value());
  EXPECT_EQ(list[0].metadata.at("zone"), "eu west&1=%");
  EXPECT_FALSE(list[1].last_completion.has_value());
  auto first_registered = list[0].registered_at;
  a.successes = 4;
  store_->put_candidate(group, a, 5s, soon());
  std::this_thread::sleep_for(300ms);
  list = store_->list_candidates(group, soon());
  ASSERT_EQ(list.size(), 1u);  // node-b expired
  EXPECT_EQ(list[0].registered_at, first_registered);
  EXPECT_EQ(list[0].successes, 4u);
  store_->remove_candidate(group, "node-a", soon());
  store_->remove_candidate(group, "node-a", soon());  // absent: fine
  EXPECT_TRUE(store_->list_candidates(group, soon()).empty());
}

TEST_F(RedisStoreTest, PrefixAndDatabaseFromTheUri) {
  auto lock = unique_lock("prefix");
  auto s = leader::open(redis_uri() + "/3?prefix=app.locks:");
  ASSERT_TRUE(s->try_acquire(request(lock), soon()));
  run(db_.get(), "SELECT 3");
  auto r = run(db_.get(), "EXISTS app.locks:%s", lock.c_str());
  EXPECT_EQ(r->integer, 1);
  run(db_.get(), "SELECT 0");
}

TEST_F(RedisStoreTest, PassedDeadlineIsDeadlineExceeded) {
  try {
    (void)store_->try_acquire(request(unique_lock("late")), Deadline::after(-1ms));
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded);
  }
}

TEST_F(RedisStoreTest, WrongPasswordIsFailedPreconditionWithoutThePassword) {
  auto s = leader::open("redis://nobody:TopSecret42@127.0.0.1:16379");
  try {
    (void)s->inspect("x", soon());
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_EQ(std::string(e.what()).find("TopSecret42"), std::string::npos) << e.what();
  }
}

TEST_F(RedisStoreTest, NothingListeningIsUnavailableWithoutThePassword) {
  auto s = leader::open("redis://:TopSecret42@127.0.0.1:1");
  try {
    (void)s->inspect("x", soon());
    FAIL() << "expected a BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable);
    EXPECT_EQ(std::string(e.what()).find("TopSecret42"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace leader::test
