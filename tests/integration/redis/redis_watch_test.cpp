// RedisStore::watch beyond the shared LockWatcher contract (tests/contract/watch_test.cpp): what
// the scripts publish, a subscriber connection killed by the server, a renew that shortens a
// lease, group slots, and an ACL user without channel permissions (Redis 7's default for new
// users), whose elections still work and whose watch polls.

#include <future>
#include <thread>

#include "leader/lock_watching.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;

LeaseRequest request(const std::string& lock, Duration ttl = 30s, int slots = 0) {
  return LeaseRequest{lock, new_owner_token(), "watch-it", ttl, slots};
}

std::string channel_of(const std::string& lock) { return "{leader:" + lock + "}:changed"; }

// How many clients are subscribed to `channel` (PUBSUB NUMSUB).
long long subscribers(redisContext* db, const std::string& channel) {
  auto r = run(db, "PUBSUB NUMSUB %s", channel.c_str());
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return -1;
  return r->element[1]->integer;
}

// Waits up to 5 s until `channel` has `n` subscribers.
bool wait_for_subscribers(redisContext* db, const std::string& channel, long long n) {
  for (int i = 0; i < 500; ++i) {
    if (subscribers(db, channel) == n) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// A watch running on a thread of its own.
struct BackgroundWatch {
  std::stop_source stop;
  std::future<LockState> result;
  BackgroundWatch(LeaseStore& store, const std::string& lock, const LockState& last_seen,
                  Duration limit = 20s) {
    LockWatcher* w = lock_watcher(store);
    EXPECT_NE(w, nullptr);
    result = std::async(std::launch::async, [w, lock, last_seen, limit, token = stop.get_token()] {
      return w->watch(lock, last_seen, Deadline::after(limit), token);
    });
  }
  ~BackgroundWatch() {
    stop.request_stop();
    if (result.valid()) result.wait();
  }
  // The watch's answer if it came within `within`.
  std::optional<LockState> get(Duration within) {
    if (result.wait_for(within) != std::future_status::ready) return std::nullopt;
    return result.get();
  }
};

TEST(RedisWatch, TheScriptsPublishEachHolderChangeOnTheLocksChannel) {
  auto db = admin();
  auto listener = admin();
  ASSERT_TRUE(db && listener);
  auto store = leader::open(redis_uri());
  const auto lock = unique_lock("publish");
  auto sub = run(listener.get(), "SUBSCRIBE %s", channel_of(lock).c_str());
  ASSERT_TRUE(sub && sub->type == REDIS_REPLY_ARRAY);
  auto next = [&]() -> std::string {
    void* r = nullptr;
    if (redisGetReply(listener.get(), &r) != REDIS_OK) return "(no message)";
    AdminReply m(static_cast<redisReply*>(r));
    return std::string(m->element[2]->str, m->element[2]->len);
  };
  auto got = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(next(), "acquired leader:" + lock);
  EXPECT_EQ(store->renew(*got.lease, 30s, soon()).status, LeaseStatus::ok);  // not shorter: quiet
  EXPECT_EQ(store->renew(*got.lease, 10s, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(next(), "shortened leader:" + lock);
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_EQ(next(), "released leader:" + lock);
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::lost);  // not ours: quiet
  auto slot1 = store->try_acquire(request(lock, 30s, 2), soon());
  auto slot2 = store->try_acquire(request(lock, 30s, 2), soon());
  ASSERT_TRUE(slot1 && slot2);
  EXPECT_EQ(next(), "acquired leader:" + lock);
  EXPECT_EQ(next(), "acquired {leader:" + lock + "}:slot:1");
  EXPECT_EQ(store->release(*slot2.lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_EQ(next(), "released {leader:" + lock + "}:slot:1");
  EXPECT_EQ(store->release(*slot1.lease, 0ms, soon()), LeaseStatus::ok);
  EXPECT_EQ(next(), "released leader:" + lock);
  EXPECT_EQ(subscribers(db.get(), channel_of(lock)), 1);  // nothing else listened
}

// The subscriber's connection is killed by the server (CLIENT KILL TYPE pubsub: a private server,
// so no one else's subscriber is hit): the watch subscribes again, does not return early, and a
// change made right after the kill (maybe published while it had no subscription) and one made
// once it is back are both reported.
TEST(RedisWatch, AChangeAfterTheSubscribersConnectionWasKilledIsStillReported) {
  PrivateRedis server(private_port());
  auto db = admin("127.0.0.1", server.port());
  ASSERT_TRUE(db);
  auto store = leader::open(server.uri());
  const auto lock = unique_lock("killed");
  const LockState free = store->inspect(lock, soon());
  for (const bool wait_for_resubscription : {true, false}) {
    SCOPED_TRACE(wait_for_resubscription ? "change after re-subscription" : "change at once");
    const LockState before = store->inspect(lock, soon());
    BackgroundWatch watch(*store, lock, before);
    ASSERT_TRUE(wait_for_subscribers(db.get(), channel_of(lock), 1));
    auto killed = run(db.get(), "CLIENT KILL TYPE pubsub");
    ASSERT_TRUE(killed && killed->type == REDIS_REPLY_INTEGER);
    EXPECT_EQ(killed->integer, 1);
    if (wait_for_resubscription) {
      ASSERT_TRUE(wait_for_subscribers(db.get(), channel_of(lock), 1)) << "never subscribed again";
      EXPECT_FALSE(watch.get(300ms)) << "the watch returned without a change";
    }
    if (before.held()) {
      auto stale = store->inspect(lock, soon());
      ASSERT_TRUE(stale.held());
      Lease lease{lock, stale.holders[0].owner, "watch-it", stale.holders[0].fencing_token, 0, 0,
                  30s};
      EXPECT_EQ(store->release(lease, 0ms, soon()), LeaseStatus::ok);
      auto seen = watch.get(3s);
      ASSERT_TRUE(seen) << "the release was not reported";
      EXPECT_FALSE(seen->held());
    } else {
      auto got = store->try_acquire(request(lock), soon());
      ASSERT_TRUE(got);
      auto seen = watch.get(3s);
      ASSERT_TRUE(seen) << "the acquire was not reported";
      ASSERT_TRUE(seen->held());
      EXPECT_EQ(seen->holders[0].fencing_token, got.lease->fencing_token);
    }
  }
  EXPECT_FALSE(free.held());
}

// A renew that shortens the lease publishes, so the watch re-arms its re-read at the new expiry
// and reports the lock free once the server expired it (long before the watch's deadline).
TEST(RedisWatch, ALeaseShortenedByARenewIsReportedFreeAtItsNewExpiry) {
  auto store = leader::open(redis_uri());
  const auto lock = unique_lock("shortened");
  auto got = store->try_acquire(request(lock, 60s), soon());
  ASSERT_TRUE(got);
  BackgroundWatch watch(*store, lock, store->inspect(lock, soon()), 30s);
  auto db = admin();
  ASSERT_TRUE(db && wait_for_subscribers(db.get(), channel_of(lock), 1));
  const auto shortened = std::chrono::steady_clock::now();
  EXPECT_EQ(store->renew(*got.lease, 300ms, soon()).status, LeaseStatus::ok);
  auto seen = watch.get(5s);
  ASSERT_TRUE(seen) << "the expiry was not reported";
  EXPECT_FALSE(seen->held());
  EXPECT_GE(std::chrono::steady_clock::now() - shortened, 290ms);
}

// A group's slots share the lock's channel: a slot taken beside a held one is reported.
TEST(RedisWatch, ASecondGroupSlotIsReported) {
  auto store = leader::open(redis_uri());
  const auto lock = unique_lock("group");
  auto first = store->try_acquire(request(lock, 30s, 3), soon());
  ASSERT_TRUE(first);
  BackgroundWatch watch(*store, lock, store->inspect(lock, soon()));
  auto db = admin();
  ASSERT_TRUE(db && wait_for_subscribers(db.get(), channel_of(lock), 1));
  auto second = store->try_acquire(request(lock, 30s, 3), soon());
  ASSERT_TRUE(second);
  auto seen = watch.get(3s);
  ASSERT_TRUE(seen);
  ASSERT_EQ(seen->holders.size(), 2u);
  EXPECT_EQ(seen->holders[1].slot, second.lease->slot);
  (void)store->release(*first.lease, 0ms, soon());
  (void)store->release(*second.lease, 0ms, soon());
}

// Redis 7 gives a new ACL user no channels (acl-pubsub-default resetchannels): its scripts may
// not PUBLISH and its SUBSCRIBE is refused. Its acquires and releases still work (the publish is
// a pcall), and its watch polls every second instead of failing.
TEST(RedisWatch, AnAclUserWithoutChannelsStillElectsAndItsWatchPolls) {
  auto db = admin();
  ASSERT_TRUE(db);
  auto r = run(db.get(),
               "ACL SETUSER leader-watch-it reset on >watch-it-pw ~leader:* ~{leader:* "
               "resetchannels +@all");
  ASSERT_TRUE(r && r->type == REDIS_REPLY_STATUS);
  auto restricted = leader::open("redis://leader-watch-it:watch-it-pw@127.0.0.1:16379");
  auto store = leader::open(redis_uri());
  const auto lock = unique_lock("acl");
  auto own = restricted->try_acquire(request(lock), soon());
  ASSERT_TRUE(own) << "the acquire failed without a channel permission";
  EXPECT_EQ(restricted->release(*own.lease, 0ms, soon()), LeaseStatus::ok);

  auto got = store->try_acquire(request(lock), soon());
  ASSERT_TRUE(got);
  BackgroundWatch watch(*restricted, lock, restricted->inspect(lock, soon()));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(subscribers(db.get(), channel_of(lock)), 0);
  EXPECT_EQ(store->release(*got.lease, 0ms, soon()), LeaseStatus::ok);
  auto seen = watch.get(3s);
  ASSERT_TRUE(seen) << "the polling watch did not report the release";
  EXPECT_FALSE(seen->held());
  (void)run(db.get(), "ACL DELUSER leader-watch-it");
}

}  // namespace
}  // namespace leader::test
