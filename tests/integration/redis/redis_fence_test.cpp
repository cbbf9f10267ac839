// Fencing tokens never repeat when a private redis-server comes back with older data: an RDB
// snapshot, an append-only file that lost its last second (appendfsync everysec), and a replica
// promoted while it was behind (an async failover).

#include <set>
#include <thread>

#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

// Acquires and releases `lock` `times` times, each by a fresh owner; checks that every token is
// new and larger than all before it, and records it in `seen`. After a restart the lock may be
// held again: a release can be lost with the data (appendfsync everysec postpones the AOF write
// while a background fsync runs, and replies to the client all the same), so the lease it ended
// comes back until its ttl runs out; each acquisition waits for that.
void acquire_round(const std::string& uri, const std::string& lock, int times,
                   std::set<std::uint64_t>& seen) {
  constexpr auto kTtl = 2s;
  auto store = leader::open(uri);
  for (int i = 0; i < times; ++i) {
    Acquired got;
    const auto until = std::chrono::steady_clock::now() + kTtl + 2s;
    do {
      got = store->try_acquire(LeaseRequest{lock, new_owner_token(), "fence-it", kTtl, 0}, soon());
      if (!got) std::this_thread::sleep_for(50ms);
    } while (!got && std::chrono::steady_clock::now() < until);
    ASSERT_TRUE(got) << "acquisition " << i << " on " << uri;
    const std::uint64_t token = got.lease->fencing_token;
    EXPECT_EQ(seen.count(token), 0u) << "fencing token " << token << " was issued before";
    if (!seen.empty()) {
      EXPECT_GT(token, *seen.rbegin()) << "fencing token went backwards";
    }
    seen.insert(token);
    EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  }
}

void copy_dir(const std::string& from, const std::string& to) {
  std::string cmd = "rm -rf " + to + " && cp -a " + from + " " + to;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

TEST(RedisFencePersistence, TokensNeverRepeatAfterRestartingFromAnOlderRdbSnapshot) {
  PrivateRedis server(free_port(), Persistence::rdb);
  auto lock = unique_lock("fence-rdb");
  std::set<std::uint64_t> seen;
  acquire_round(server.uri(), lock, 3, seen);
  auto db = admin("127.0.0.1", server.port());
  ASSERT_TRUE(db);
  ASSERT_EQ(run(db.get(), "SAVE")->type, REDIS_REPLY_STATUS);
  acquire_round(server.uri(), lock, 3, seen);  // issued after the snapshot: lost by the crash
  server.restart();                            // kill -9, then load dump.rdb
  acquire_round(server.uri(), lock, 3, seen);
}

TEST(RedisFencePersistence, TokensNeverRepeatAfterAnAppendOnlyFileLostItsLastSecond) {
  PrivateRedis server(free_port(), Persistence::aof_everysec);
  auto lock = unique_lock("fence-aof");
  std::set<std::uint64_t> seen;
  acquire_round(server.uri(), lock, 3, seen);
  server.restart();  // kill -9 right after the writes: the kernel had most of them
  acquire_round(server.uri(), lock, 3, seen);
  // What an OS crash or power loss does with appendfsync everysec: the file as it was at the
  // last fsync. A copy of the directory taken now stands for it.
  const std::string durable = server.data_dir() + ".fsynced";
  copy_dir(server.data_dir(), durable);
  acquire_round(server.uri(), lock, 3, seen);  // written, never fsynced
  server.kill_now();
  copy_dir(durable, server.data_dir());
  (void)!std::system(("rm -rf " + durable).c_str());
  server.start();
  acquire_round(server.uri(), lock, 3, seen);
}

TEST(RedisFencePersistence, TokensNeverRepeatAfterPromotingAReplicaThatWasBehind) {
  PrivateRedis primary(free_port(), Persistence::none);
  PrivateRedis replica(free_port(), Persistence::none);
  replica.kill_now();
  replica.start(primary.port());
  auto lock = unique_lock("fence-failover");
  std::set<std::uint64_t> seen;
  acquire_round(primary.uri(), lock, 3, seen);
  auto p = admin("127.0.0.1", primary.port());
  ASSERT_TRUE(p);
  AdminReply acked;
  for (int i = 0; i < 100; ++i) {  // the replica has the first three
    acked = run(p.get(), "WAIT 1 100");
    if (acked && acked->type == REDIS_REPLY_INTEGER && acked->integer == 1) break;
  }
  ASSERT_TRUE(acked && acked->integer == 1) << "the replica never caught up";
  replica.pause();  // from now on it falls behind: its link is cut while it cannot reconnect
  ASSERT_EQ(run(p.get(), "CLIENT KILL TYPE replica")->type, REDIS_REPLY_INTEGER);
  acquire_round(primary.uri(), lock, 3, seen);
  primary.kill_now();  // the primary dies with writes the replica never got
  replica.resume();
  auto r = admin("127.0.0.1", replica.port());
  ASSERT_TRUE(r);
  ASSERT_EQ(run(r.get(), "REPLICAOF NO ONE")->type, REDIS_REPLY_STATUS);  // the failover
  acquire_round(replica.uri(), lock, 3, seen);
}

}  // namespace
}  // namespace leader::test
