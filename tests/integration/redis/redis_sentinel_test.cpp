// The Redis store behind Sentinel (issue 15) on scripts/redis-sentinel.sh's topology (primary and
// replica on 22600/22601, Sentinels 22610-22612, master 'leader-test'): URI parsing, discovery,
// a demoted primary's READONLY (BackendError, then the new primary), fencing across a failover,
// and a WAIT shortfall (the grant is released and reported as an unknown outcome, never as held).
// These cases fail over the shared topology: RESOURCE_LOCK redis-sentinel.

#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "config.hpp"
#include "leader/leader.hpp"
#include "redis_test_util.hpp"

namespace leader::test {
namespace {

using namespace std::chrono_literals;
using detail::redis::Config;

const std::string kSentinels = "127.0.0.1:22610,127.0.0.1:22611,127.0.0.1:22612";
std::string sentinel_uri(const std::string& query = "") {
  return env_or("LEADER_TEST_REDIS_SENTINEL_URI",
                "redis-sentinel://" + kSentinels + "/leader-test") +
         query;
}

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

// The primary's port as Sentinel 22610 names it (0 when it does not answer).
int named_primary() {
  auto c = admin("127.0.0.1", 22610);
  if (!c) return 0;
  auto r = run(c.get(), "SENTINEL GET-MASTER-ADDR-BY-NAME leader-test");
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return 0;
  return std::atoi(r->element[1]->str);
}

std::string role(int port) {
  auto c = admin("127.0.0.1", port);
  if (!c) return "";
  auto r = run(c.get(), "ROLE");
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1) return "";
  return r->element[0]->str;
}

bool replica_online(int primary) {
  auto c = admin("127.0.0.1", primary);
  if (!c) return false;
  auto r = run(c.get(), "INFO replication");
  return r && r->type == REDIS_REPLY_STRING &&
         std::string(r->str).find("state=online") != std::string::npos;
}

// Makes `old` a replica of `primary` (what the Sentinels do at their next INFO to it, up to 10 s
// after a manual failover) and waits until replication is online.
void reattach(int old, int primary) {
  {
    auto c = admin("127.0.0.1", old);
    ASSERT_TRUE(c);
    auto r = run(c.get(), "REPLICAOF 127.0.0.1 %d", primary);
    ASSERT_TRUE(r && r->type == REDIS_REPLY_STATUS);
  }
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < give_up && !replica_online(primary))
    std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(replica_online(primary));
}

// Whether Sentinel 22610 sees a replica it would promote: flags exactly "slave" (not s_down,
// disconnected, ...) and its link to the primary up. It learns a replica re-attached by reattach()
// only at its next INFO (up to 10 s), and a failover asked before then aborts for want of one.
bool sentinel_sees_a_good_replica() {
  auto c = admin("127.0.0.1", 22610);
  if (!c) return false;
  auto r = run(c.get(), "SENTINEL REPLICAS leader-test");
  if (!r || r->type != REDIS_REPLY_ARRAY) return false;
  for (std::size_t i = 0; i < r->elements; ++i) {
    const redisReply* fields = r->element[i];
    std::string flags, link;
    for (std::size_t k = 0; k + 1 < fields->elements; k += 2) {
      const std::string key = fields->element[k]->str;
      if (key == "flags") flags = fields->element[k + 1]->str;
      if (key == "master-link-status") link = fields->element[k + 1]->str;
    }
    if (flags == "slave" && link == "ok") return true;
  }
  return false;
}

// SENTINEL FAILOVER, then waits until the other server is named and serves as the primary (the
// old one still serves as a primary too: the Sentinels demote it at their next INFO, up to 10 s
// later). Returns the new primary's port. Asks again (within 30 s) when the Sentinels aborted it:
// seen once in a full ctest run, a failover asked right after the previous case's re-attachment.
int fail_over() {
  const int old = named_primary();
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < give_up && !sentinel_sees_a_good_replica())
    std::this_thread::sleep_for(100ms);
  while (std::chrono::steady_clock::now() < give_up) {
    {
      auto c = admin("127.0.0.1", 22610);
      auto r = run(c.get(), "SENTINEL FAILOVER leader-test");
      // -INPROG: one is already under way; anything else but +OK is a failure of the request.
      const bool accepted = r && (r->type == REDIS_REPLY_STATUS ||
                                  (r->type == REDIS_REPLY_ERROR &&
                                   std::string(r->str).find("INPROG") != std::string::npos));
      EXPECT_TRUE(accepted) << (r && r->str ? r->str : "no reply");
    }
    const auto next_ask = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < std::min(next_ask, give_up)) {
      const int now = named_primary();
      if (now != 0 && now != old && role(now) == "master") return now;
      std::this_thread::sleep_for(50ms);
    }
  }
  ADD_FAILURE() << "no failover away from " << old << " within 30 s";
  return 0;
}

bool topology_up() { return named_primary() != 0; }

#define REQUIRE_TOPOLOGY()                                                                     \
  if (!topology_up()) GTEST_SKIP() << "scripts/redis-sentinel.sh start: no Sentinel on 22610"; \
  static_assert(true)

TEST(RedisSentinelUri, BothSpellingsAndTheirErrors) {
  auto a = parse("redis-sentinel://:pw@127.0.0.1:1,127.0.0.1/m1?db=2&wait_replicas=1");
  ASSERT_TRUE(a.sentinel());
  ASSERT_EQ(a.sentinels.size(), 2U);
  EXPECT_EQ(a.sentinels[1].port, 26379);
  EXPECT_EQ(a.master_name, "m1");
  EXPECT_EQ(a.db, 2);
  EXPECT_EQ(a.password.value_or(""), "pw");
  EXPECT_EQ(a.wait_replicas, 1);
  EXPECT_EQ(a.wait_timeout, 100ms);
  auto b = parse("redis://h1:5,h2:6/3?sentinel=m2&wait_replicas=2&wait_timeout=1s");
  ASSERT_TRUE(b.sentinel());
  EXPECT_EQ(b.master_name, "m2");
  EXPECT_EQ(b.db, 3);
  EXPECT_EQ(b.wait_timeout, 1s);
  EXPECT_FALSE(parse("redis://h?wait_replicas=1").sentinel());  // WAIT without Sentinel is fine
  for (const char* bad :
       {"redis-sentinel://h1,h2", "redis-sentinel://h1/a/b", "redis-sentinel://h1/m?sentinel=x",
        "rediss://h?sentinel=m", "redis-sentinel://h/m?wait_timeout=5ms",
        "redis-sentinel://h/m?wait_replicas=1&wait_timeout=0ms",
        "redis-sentinel://h/m?wait_replicas=-1"}) {
    EXPECT_THROW(parse(bad), InvalidArgument) << bad;
  }
  EXPECT_EQ(open(sentinel_uri())->scheme(), "redis-sentinel");
}

TEST(RedisSentinel, UnknownMasterNameIsFailedPrecondition) {
  REQUIRE_TOPOLOGY();
  auto store = open("redis-sentinel://" + kSentinels + "/no-such-master");
  try {
    (void)store->inspect(unique_lock("s"), Deadline::after(3s));
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-master"), std::string::npos) << e.what();
  }
}

TEST(RedisSentinel, FollowsAFailoverWithoutLosingTheReplicatedLeaseOrRepeatingTokens) {
  REQUIRE_TOPOLOGY();
  auto store = open(sentinel_uri());
  const std::string lock = unique_lock("failover");
  auto stale = open(sentinel_uri("?sentinel_check=0ms"));
  auto got = store->try_acquire({lock, new_owner_token(), "n1", 30s, 0}, Deadline::after(3s));
  ASSERT_TRUE(got);
  ASSERT_EQ(stale->inspect(lock, Deadline::after(3s)).holders.size(), 1U);
  const int old = named_primary();
  const int primary = fail_over();
  ASSERT_NE(primary, 0);
  // The old primary still serves as one: the store's periodic check (sentinel_check, 250 ms)
  // must move it to the new primary, where the renew has to land.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(role(old), "master") << "the Sentinels demoted it early: the case is not exercised";
  auto r0 = store->renew(*got.lease, 30s, Deadline::after(3s));
  EXPECT_EQ(r0.status, LeaseStatus::ok);
  {
    auto c = admin("127.0.0.1", primary);
    auto ttl = run(c.get(), "PTTL %s", ("leader:" + lock).c_str());
    ASSERT_TRUE(ttl && ttl->type == REDIS_REPLY_INTEGER);
    EXPECT_GT(ttl->integer, 29000) << "the renew did not reach the new primary";
  }
  reattach(old, primary);
  // `stale` (no periodic check) kept its pooled connection to the old primary, now a replica:
  // READONLY is a BackendError (not applied), never "lost"; the next call asks the Sentinels.
  int errors = 0;
  Renewal r{};
  for (int i = 0; i < 3; ++i) {
    try {
      r = stale->renew(*got.lease, 30s, Deadline::after(3s));
      break;
    } catch (const BackendError& e) {
      EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
      ++errors;
    }
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(r.status, LeaseStatus::ok) << "the lease was replicated before the manual failover";
  ASSERT_EQ(store->release(*got.lease, 0ms, Deadline::after(3s)), LeaseStatus::ok);
  auto next = store->try_acquire({lock, new_owner_token(), "n2", 30s, 0}, Deadline::after(3s));
  ASSERT_TRUE(next);
  EXPECT_GT(next.lease->fencing_token, got.lease->fencing_token);
  EXPECT_EQ(store->release(*next.lease, 0ms, Deadline::after(3s)), LeaseStatus::ok);
}

TEST(RedisSentinel, AWaitShortfallReleasesTheGrantAndIsAnUnknownOutcome) {
  REQUIRE_TOPOLOGY();
  auto store = open(sentinel_uri("?wait_replicas=1&wait_timeout=50ms"));
  const std::string lock = unique_lock("wait");
  // With the replica online, WAIT 1 succeeds.
  auto ok = store->try_acquire({lock, new_owner_token(), "n1", 30s, 0}, Deadline::after(3s));
  ASSERT_TRUE(ok);
  EXPECT_EQ(store->renew(*ok.lease, 30s, Deadline::after(3s)).status, LeaseStatus::ok);
  ASSERT_EQ(store->release(*ok.lease, 0ms, Deadline::after(3s)), LeaseStatus::ok);
  // The replica paused (shorter than down-after: no failover): too few acknowledgements.
  const int primary = named_primary();
  const pid_t replica =
      read_pid_file(env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/redis-sentinel-22600-" +
                    (primary == 22600 ? "r1" : "r0") + ".pid");
  ASSERT_EQ(::kill(replica, SIGSTOP), 0);
  std::optional<BackendError> error;
  try {
    (void)store->try_acquire({lock, new_owner_token(), "n2", 30s, 0}, Deadline::after(3s));
  } catch (const BackendError& e) {
    error = e;
  }
  ::kill(replica, SIGCONT);
  ASSERT_TRUE(error.has_value()) << "a grant with 0 of 1 replicas was reported as held";
  EXPECT_EQ(error->code(), ErrorCode::deadline_exceeded) << error->what();
  EXPECT_NE(std::string(error->what()).find("released"), std::string::npos) << error->what();
  EXPECT_TRUE(store->inspect(lock, Deadline::after(3s)).holders.empty()) << "leaked";
}

}  // namespace
}  // namespace leader::test
