// Server faults against a private redis-server (restart, pause, kill); a killed holder process
// is the contract suite's case.

#include <unistd.h>

#include <atomic>

#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

LeaseRequest request(const std::string& lock, Duration ttl = 5s) {
  return LeaseRequest{lock, new_owner_token(), "node-" + std::to_string(::getpid()), ttl, 0};
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const BackendError& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected a BackendError";
  return ErrorCode::internal;
}

TEST(RedisServerFaults, RestartWhileHoldingLosesTheLeaseWithoutDuplicate) {
  PrivateRedis server(private_port());
  auto holder = leader::open(server.uri());
  auto lock = unique_lock("restart");
  auto got = holder->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  server.restart();  // no persistence: the lease and the fence counter are gone
  // The holder learns on its next renewal (over a new connection) that the lease is lost ...
  EXPECT_EQ(holder->renew(lease, 5s, soon()).status, LeaseStatus::lost);
  // ... so the next owner is the only one, and its token is still larger.
  auto next = leader::open(server.uri())->try_acquire(request(lock), soon());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, lease.fencing_token);
  EXPECT_EQ(holder->renew(lease, 5s, soon()).status, LeaseStatus::lost);
}

TEST(RedisServerFaults, RestartWithPersistenceKeepsTheLeaseWithTheSameOwner) {
  PrivateRedis server(private_port(), /*persistent=*/true);
  auto holder = leader::open(server.uri());
  auto lock = unique_lock("restart-aof");
  auto got = holder->try_acquire(request(lock, 30s), soon());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  server.restart();  // kill -9; the append-only file (fsync always) has the lease
  auto contender = leader::open(server.uri());
  EXPECT_FALSE(contender->try_acquire(request(lock), soon()));  // kept: still exclusive
  EXPECT_EQ(holder->renew(lease, 30s, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(holder->release(lease, 0ms, soon()), LeaseStatus::ok);
  auto next = contender->try_acquire(request(lock), soon());
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, lease.fencing_token);
}

TEST(RedisServerFaults, UnixSocketWithDatabaseWorks) {
  PrivateRedis server(private_port());
  auto store = leader::open("unix://" + server.socket_path() + "?db=5");
  EXPECT_EQ(store->scheme(), "unix");
  auto lock = unique_lock("unix");
  auto got = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  auto db = admin("127.0.0.1", server.port());
  ASSERT_TRUE(db);
  run(db.get(), "SELECT 5");
  EXPECT_EQ(run(db.get(), "EXISTS leader:%s", lock.c_str())->integer, 1);
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_EQ(run(db.get(), "EXISTS leader:%s", lock.c_str())->integer, 0);
}

TEST(RedisServerFaults, PausedServerHitsTheDeadlineThenRecovers) {
  PrivateRedis server(private_port());
  auto store = leader::open(server.uri());
  auto lock = unique_lock("pause");
  ASSERT_FALSE(store->inspect(lock, soon()).held());  // a warm pooled connection
  server.pause();
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(code_of([&] { (void)store->try_acquire(request(lock), Deadline::after(300ms)); }),
            ErrorCode::deadline_exceeded);
  auto fresh = leader::open(server.uri());  // a new connection: the kernel accepts, no answer
  EXPECT_EQ(code_of([&] { (void)fresh->inspect(lock, Deadline::after(300ms)); }),
            ErrorCode::deadline_exceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);  // generous: no hang past deadlines
  server.resume();
  EXPECT_TRUE(store->try_acquire(request(lock), soon()));
}

TEST(RedisServerFaults, StoppedServerIsUnavailableThenWorkResumes) {
  PrivateRedis server(private_port());
  auto store = leader::open(server.uri());
  auto lock = unique_lock("down");
  ASSERT_FALSE(store->inspect(lock, soon()).held());
  server.kill_now();
  EXPECT_EQ(code_of([&] { (void)store->inspect(lock, soon()); }), ErrorCode::unavailable);
  server.start();
  EXPECT_TRUE(store->try_acquire(request(lock), soon()));
}

// The server pauses longer than the lease: the holder cannot renew, so its stop_token must fire
// (at its local deadline) before any other client can acquire once the server is back.
TEST(RedisServerFaults, PausedServerFiresTheHoldersStopTokenBeforeAnyoneElseAcquires) {
  using Clock = std::chrono::steady_clock;
  PrivateRedis server(private_port());
  auto lock = unique_lock("sigstop");
  LeaderElector holder(leader::open(server.uri()),
                       {.wait_time = 0s, .lease_time = 1s, .auto_extend = true});
  std::atomic<bool> elected{false};
  std::atomic<Clock::rep> stopped_at{0};
  std::thread runner([&] {
    try {
      (void)holder.run_if_leader(lock, [&](LeaderContext& ctx) {
        elected = true;
        auto until = Clock::now() + 10s;
        while (!ctx.stop_token().stop_requested() && Clock::now() < until)
          std::this_thread::sleep_for(2ms);
        stopped_at = Clock::now().time_since_epoch().count();
        return 0;
      });
    } catch (const std::exception&) {  // the release may fail while the server is paused
    }
  });
  while (!elected) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(300ms);  // at least one renewal went through
  server.pause();
  std::this_thread::sleep_for(2500ms);  // longer than the lease
  server.resume();
  auto contender = leader::open(server.uri());
  Acquired got;
  for (int i = 0; i < 200 && !got; ++i) {
    got = contender->try_acquire(request(lock), soon());
    if (!got) std::this_thread::sleep_for(10ms);
  }
  auto acquired_at = Clock::now().time_since_epoch().count();
  runner.join();
  ASSERT_TRUE(got);
  ASSERT_NE(stopped_at.load(), 0);
  EXPECT_LT(stopped_at.load(), acquired_at);
}

}  // namespace
}  // namespace leader::test
