// Consul store integration tests against private doubles: URI and ACL errors, lock-delay, session
// invalidation, fencing tokens across deletes, moves to a new session for another ttl.

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "consul_double.hpp"

namespace leader::consul::test {
namespace {

void expect_invalid(const std::string& uri, const std::string& needle) {
  try {
    (void)leader::open(uri);
    ADD_FAILURE() << uri << " was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
}

TEST(ConsulUri, RefusesBadSettingsWithoutShowingTheToken) {
  expect_invalid("consul://u:s3cret@h:8500", "userinfo");
  expect_invalid("consul://h:8500/path?token=s3cret", "path");
  expect_invalid("consul://h:8500?token=s3cret&tls_ca=/ca.pem", "tls=true");
  expect_invalid("consul://h:8500?token=s3cret&prefix=a//b", "prefix");
  expect_invalid("consul://h:8500?token=s3cret&prefix=a:b", "prefix");
  expect_invalid("consul://h:8500?token=s3cret&lock_delay=61s", "lock_delay");
  expect_invalid("consul://h:8500?token=s3cret&pool_size=0", "pool_size");
  expect_invalid("consul://h:8500?token=s3cret&bogus=1", "bogus");
  expect_invalid("consul://h1:1,h2:2?token=s3cret", "exactly one agent");
  Config c = Config::from_uri(Uri::parse("consul://h?prefix=/jobs/x/&lock_delay=15s"));
  EXPECT_EQ(c.base_url, "http://h:8500");
  EXPECT_EQ(c.prefix, "jobs/x");
  EXPECT_EQ(c.lock_delay, std::chrono::seconds(15));
  EXPECT_FALSE(Config::from_uri(Uri::parse("consul://h")).lock_delay) << "default: auto";
  EXPECT_FALSE(Config::from_uri(Uri::parse("consul://h?lock_delay=auto")).lock_delay);
  EXPECT_EQ(Config::from_uri(Uri::parse("consul://h?lock_delay=0s")).lock_delay, Duration{0});
}

TEST(ConsulAcl, AWrongTokenIsFailedPreconditionAndTheTokenIsNeverShown) {
  DoubleServer d({"--acl-token", "s3cret-right"});
  try {
    (void)d.store("&token=s3cret-wrong")->try_acquire(single("acl", Ms{1000}), soon());
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)d.store()->inspect("acl", soon()), BackendError);  // no token at all
  auto ok = d.store("&token=s3cret-right")->try_acquire(single("acl", Ms{1000}), soon());
  ASSERT_TRUE(ok);
  const std::string file = "/tmp/consul-it-token-" + std::to_string(::getpid());
  std::ofstream(file) << "s3cret-right\n";
  auto via_file = d.store("&token_file=" + file);
  EXPECT_EQ(via_file->inspect("acl", soon()).holders.size(), 1u);
  EXPECT_EQ(via_file->release(*ok.lease, Ms{0}, soon()), LeaseStatus::ok);
  std::remove(file.c_str());
}

TEST(ConsulErrors, AnUnreachableAgentIsUnavailable) {
  auto s = leader::open("consul://127.0.0.1:1?session_ttl_min=100ms");
  try {
    (void)s->try_acquire(single("down", Ms{1000}), soon());
    ADD_FAILURE() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
}

// Waits until `key` is no longer held by a session (the double invalidated it).
bool wait_released(ConsulStore& s, const std::string& key, Ms limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    auto e = s.api().get(key, soon());
    if (e && e->session.empty()) return true;
    std::this_thread::sleep_for(Ms{10});
  }
  return false;
}

TEST(ConsulLockDelay, AfterAnExpiryTheKeyIsRefusedAsContentionUntilTheDelayEnds) {
  DoubleServer d({"--ttl-multiplier", "1"});
  auto s = d.store("&lock_delay=1s");
  auto held = s->try_acquire(single("ld", Ms{300}), soon());  // never renewed
  ASSERT_TRUE(held);
  ASSERT_TRUE(wait_released(*s, s->holder_key("ld", 0, 0), Ms{3000}));
  auto early = d.store()->try_acquire(single("ld", Ms{1000}), soon());
  EXPECT_FALSE(early) << "acquired during the lock-delay";
  std::optional<Lease> later;
  for (int i = 0; i < 100 && !later; ++i) {
    std::this_thread::sleep_for(Ms{50});
    if (auto g = d.store()->try_acquire(single("ld", Ms{1000}), soon())) later = *g.lease;
  }
  ASSERT_TRUE(later) << "never acquired after the lock-delay";
  EXPECT_GT(later->fencing_token, held.lease->fencing_token);
}

TEST(ConsulLockDelay, AReleaseStartsNoLockDelay) {
  DoubleServer d;
  auto s = d.store("&lock_delay=30s");
  for (int i = 0; i < 3; ++i) {
    auto g = s->try_acquire(single("rel", Ms{1000}), soon());
    ASSERT_TRUE(g) << "round " << i;
    EXPECT_EQ(s->release(*g.lease, Ms{0}, soon()), LeaseStatus::ok);
  }
}

TEST(ConsulSessions, AnInvalidatedSessionLosesTheLeaseAndTheNextTokenIsLarger) {
  DoubleServer d;
  auto s = d.store();
  auto first = s->try_acquire(single("inv", Ms{1000}), soon());
  ASSERT_TRUE(first);
  auto key = s->api().get(s->holder_key("inv", 0, 0), soon());
  ASSERT_TRUE(key && !key->session.empty());
  s->api().destroy_session(key->session, soon());  // as an operator or a failed check would
  Lease copy = *first.lease;
  EXPECT_EQ(status_of(s->renew(copy, Ms{1000}, soon())), LeaseStatus::lost);
  EXPECT_EQ(s->release(*first.lease, Ms{0}, soon()), LeaseStatus::lost);
  // The session's lock-delay (auto: its TTL) holds the key back, then the next holder gets in.
  EXPECT_FALSE(d.store()->try_acquire(single("inv", Ms{1000}), soon()));
  std::optional<Lease> second;
  for (int i = 0; i < 100 && !second; ++i) {
    std::this_thread::sleep_for(Ms{50});
    if (auto g = s->try_acquire(single("inv", Ms{1000}), soon())) second = *g.lease;
  }
  ASSERT_TRUE(second) << "never acquired after the lock-delay";
  EXPECT_GT(second->fencing_token, first.lease->fencing_token);
}

TEST(ConsulTokens, IncreaseAcrossReleaseExpiryAndDeletedKeys) {
  DoubleServer d({"--ttl-multiplier", "1"});
  auto s = d.store("&lock_delay=0s");  // takes the key again right after its expiry
  std::uint64_t last = 0;
  auto take = [&](Ms ttl, bool release) {
    auto g = s->try_acquire(single("tok", ttl), soon());
    ASSERT_TRUE(g);
    EXPECT_GT(g.lease->fencing_token, last);
    last = g.lease->fencing_token;
    if (release) {
      EXPECT_EQ(s->release(*g.lease, Ms{0}, soon()), LeaseStatus::ok);
    }
  };
  take(Ms{1000}, true);
  take(Ms{200}, false);  // expires on the server
  ASSERT_TRUE(wait_released(*s, s->holder_key("tok", 0, 0), Ms{3000}));
  take(Ms{1000}, true);
  auto lock_key = s->api().get(s->holder_key("tok", 0, 0), soon());
  ASSERT_TRUE(lock_key);
  ASSERT_TRUE(s->api().delete_cas(lock_key->key, lock_key->modify_index, soon()));  // consul lock
  take(Ms{1000}, true);
  auto fence = s->api().get(s->lock_path("tok") + "/.fence", soon());
  ASSERT_TRUE(fence);
  ASSERT_TRUE(s->api().delete_cas(fence->key, fence->modify_index, soon()));  // by hand
  take(Ms{1000}, true);
}

TEST(ConsulMoves, ARenewWithAnotherTtlMovesTheKeyToANewSessionKeepingTheToken) {
  DoubleServer d;
  auto s = d.store();
  auto g = s->try_acquire(single("mv", Ms{1000}), soon());
  ASSERT_TRUE(g);
  const std::string key = s->holder_key("mv", 0, 0);
  const std::string before = s->api().get(key, soon())->session;
  Lease l = *g.lease;
  const auto r = s->renew(l, Ms{2500}, soon());
  ASSERT_EQ(status_of(r), LeaseStatus::ok);
  EXPECT_EQ(granted_of(r, l), Ms{2500});
  const std::string after = s->api().get(key, soon())->session;
  EXPECT_NE(before, after);
  EXPECT_FALSE(s->api().renew_session(before, soon())) << "the old session still lives";
  auto state = s->inspect("mv", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].fencing_token, g.lease->fencing_token);
  ASSERT_EQ(status_of(s->renew(l, Ms{2500}, soon())),
            LeaseStatus::ok);  // same ttl: a plain session renew
  EXPECT_EQ(s->api().get(key, soon())->session, after);
  EXPECT_EQ(s->release(l, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ConsulMoves, AShortTtlIsGrantedAsTheAgentsMinimum) {
  DoubleServer d;
  auto s = d.store("&session_ttl_min=2s");
  auto g = s->try_acquire(single("min", Ms{500}), soon());
  ASSERT_TRUE(g);
  EXPECT_EQ(g.lease->ttl, Ms{2000}) << "the granted ttl must be what the session has";
  EXPECT_EQ(s->release(*g.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ConsulTtl, WithConsulsTwoTtlMultiplierTheKeyIsNeverFreedBeforeTheTtl) {
  DoubleServer d({"--ttl-multiplier", "2"});
  auto s = d.store();
  const auto t0 = std::chrono::steady_clock::now();
  auto g = s->try_acquire(single("two", Ms{400}), soon());
  ASSERT_TRUE(g);
  std::optional<std::chrono::steady_clock::time_point> taken;
  auto other = d.store();
  while (!taken && std::chrono::steady_clock::now() - t0 < Ms{5000}) {
    if (other->try_acquire(single("two", Ms{1000}), soon()))
      taken = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(Ms{20});
  }
  ASSERT_TRUE(taken);
  EXPECT_GE(*taken - t0, Ms{400}) << "freed before its TTL";
}

}  // namespace
}  // namespace leader::consul::test
