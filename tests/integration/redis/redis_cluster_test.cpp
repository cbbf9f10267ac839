// The Redis store on a Redis Cluster (issue 15) on scripts/redis-cluster.sh's 3 primaries
// (22700-22702): URI parsing, key slots (CRC16 of the hash tag, as Redis), and a lock whose slot
// is migrated to another node while held: ASK during the migration, MOVED after it; the lease,
// its fencing order and its scripts follow (RESOURCE_LOCK redis-cluster).

#include <gtest/gtest.h>

#include "config.hpp"
#include "leader/leader.hpp"
#include "leader/lock_listing.hpp"
#include "redis/cluster.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;
using redis::Config;
using redis::key_slot;

const std::string kUri = "redis-cluster://127.0.0.1:22700,127.0.0.1:22701,127.0.0.1:22702";

std::string node_id(int port) {
  auto c = admin("127.0.0.1", port);
  auto r = run(c.get(), "CLUSTER MYID");
  return r && r->type == REDIS_REPLY_STRING ? r->str : "";
}

// The port of the node that serves `slot`.
int owner_of(int slot) {
  auto c = admin("127.0.0.1", 22700);
  auto r = run(c.get(), "CLUSTER SLOTS");
  for (std::size_t i = 0; r && i < r->elements; ++i) {
    const redisReply* range = r->element[i];
    if (slot >= range->element[0]->integer && slot <= range->element[1]->integer)
      return static_cast<int>(range->element[2]->element[1]->integer);
  }
  return 0;
}

TEST(RedisClusterUri, FormsAndSlots) {
  auto c = Config::from_uri(Uri::parse("redis-cluster://h1:1,h2?prefix=p:&wait_replicas=1"));
  ASSERT_TRUE(c.cluster());
  EXPECT_EQ(c.cluster_seeds.size(), 2U);
  EXPECT_EQ(c.cluster_seeds[1].port, 6379);
  EXPECT_THROW(Config::from_uri(Uri::parse("redis-cluster://h1/2")), InvalidArgument);
  EXPECT_THROW(Config::from_uri(Uri::parse("redis-cluster://h1?sentinel=m")), InvalidArgument);
  // Redis' own values (CLUSTER KEYSLOT).
  EXPECT_EQ(key_slot("123456789"), 12739);
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  EXPECT_EQ(key_slot("{}x"), key_slot("{}x"));  // an empty tag hashes the whole key
  EXPECT_EQ(key_slot("{leader:a}:fence"), key_slot("leader:a"));
}

TEST(RedisCluster, KeySlotsAgreeWithTheServer) {
  auto c = admin("127.0.0.1", 22700);
  if (!c) GTEST_SKIP() << "scripts/redis-cluster.sh start: no node on 22700";
  for (const char* k : {"leader:x", "{leader:x}:slot:3", "a{b}c", "{}x", "{{a}}", "ab{"}) {
    auto r = run(c.get(), "CLUSTER KEYSLOT %s", k);
    ASSERT_TRUE(r && r->type == REDIS_REPLY_INTEGER);
    EXPECT_EQ(key_slot(k), r->integer) << k;
  }
}

TEST(RedisCluster, ALeaseFollowsItsSlotAcrossAMigrationByAskThenMoved) {
  if (!admin("127.0.0.1", 22700)) GTEST_SKIP() << "scripts/redis-cluster.sh start";
  auto store = open(kUri);
  const std::string lock = unique_lock("migrate");
  auto got = store->try_acquire({lock, new_owner_token(), "n1", 30s, 0}, Deadline::after(3s));
  ASSERT_TRUE(got);
  const int slot = key_slot("leader:" + lock);
  const int from = owner_of(slot);
  const int to = from == 22700 ? 22701 : 22700;
  ASSERT_NE(from, 0);
  auto src = admin("127.0.0.1", from);
  auto dst = admin("127.0.0.1", to);
  ASSERT_TRUE(run(dst.get(), "CLUSTER SETSLOT %d IMPORTING %s", slot, node_id(from).c_str()));
  ASSERT_TRUE(run(src.get(), "CLUSTER SETSLOT %d MIGRATING %s", slot, node_id(to).c_str()));
  auto keys = run(src.get(), "CLUSTER GETKEYSINSLOT %d 100", slot);
  ASSERT_TRUE(keys && keys->type == REDIS_REPLY_ARRAY && keys->elements >= 2);  // lease, fence..
  for (std::size_t i = 0; i < keys->elements; ++i) {
    auto m = run(src.get(), "MIGRATE 127.0.0.1 %d %s 0 5000", to, keys->element[i]->str);
    ASSERT_TRUE(m && m->type == REDIS_REPLY_STATUS) << (m && m->str ? m->str : "no reply");
  }
  // Migrating: the source answers ASK for the moved keys; the store asks the target.
  EXPECT_EQ(store->renew(*got.lease, 30s, Deadline::after(3s)).status, LeaseStatus::ok);
  EXPECT_EQ(store->inspect(lock, Deadline::after(3s)).holders.size(), 1U);
  for (int port : {22700, 22701, 22702}) {
    auto c = admin("127.0.0.1", port);
    ASSERT_TRUE(run(c.get(), "CLUSTER SETSLOT %d NODE %s", slot, node_id(to).c_str()));
  }
  // Moved: the source answers MOVED; the store reads the slot map again.
  EXPECT_EQ(store->renew(*got.lease, 30s, Deadline::after(3s)).status, LeaseStatus::ok);
  ASSERT_EQ(store->release(*got.lease, 0ms, Deadline::after(3s)), LeaseStatus::ok);
  auto next = open(kUri)->try_acquire({lock, new_owner_token(), "n2", 30s, 0}, Deadline::after(3s));
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, got.lease->fencing_token);
  EXPECT_EQ(owner_of(slot), to);
  // Every lock name lands on its slot's node, and list_locks sees the locks of every node.
  auto tmp = admin("127.0.0.1", to);
  auto exists = run(tmp.get(), "EXISTS %s", ("leader:" + lock).c_str());
  EXPECT_EQ(exists->integer, 1);
  const auto held = list_locks(*store, "it-migrate", Deadline::after(3s));
  EXPECT_FALSE(held.empty());
  EXPECT_EQ(store->release(*next.lease, 0ms, Deadline::after(3s)), LeaseStatus::ok);
}

}  // namespace
}  // namespace leader::test
