// The key layout shared with `consul lock` (README "Compatibility with `consul lock`"), checked by
// replaying the HTTP calls `consul lock` makes (api.Lock: own session, ?acquire with
// LockFlagValue, ?release with the same flags, DELETE ?cas): the consul binary is not available.

#include <gtest/gtest.h>

#include <thread>

#include "consul_double.hpp"

namespace leader::consul::test {
namespace {

TEST(ConsulLockLayout, TheStoreAndConsulLockExcludeEachOtherOnPrefixLockDotLock) {
  DoubleServer d;
  auto s = d.store();
  auto ours = s->try_acquire(single("job", Ms{5000}), soon());
  ASSERT_TRUE(ours);
  const std::string key = "it/job/.lock";
  ASSERT_EQ(s->holder_key("job", 0, 0), key);
  auto e = s->api().get(key, soon());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->flags, kLockFlag);
  EXPECT_EQ(decode_holder(e->value)->owner, ours.lease->owner);
  // consul lock it/job: its own session, then ?acquire=<sid>&flags=LockFlagValue.
  auto& api = s->api();
  const std::string sid =
      api.create_session({"Consul lock for 'true' at 'it/job'", Ms{15000}, Ms{0}, false}, soon());
  EXPECT_FALSE(api.acquire(key, sid, kLockFlag, "", soon())) << "consul lock got in";
  EXPECT_EQ(s->release(*ours.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(api.get(key, soon())->flags, kLockFlag) << "release must keep consul lock's flags";
  ASSERT_TRUE(api.acquire(key, sid, kLockFlag, "", soon()));
  EXPECT_FALSE(d.store()->try_acquire(single("job", Ms{1000}), soon())) << "we got in";
  auto state = s->inspect("job", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].node_id, "session " + sid);
  try {
    (void)s->try_acquire(single("job", Ms{1000}, 2), soon());
    ADD_FAILURE() << "a group was granted next to consul lock";
  } catch (const BackendError& err) {
    EXPECT_EQ(err.code(), ErrorCode::failed_precondition) << err.what();
  }
  // consul lock's end: release with its flags, destroy its session, DELETE ?cas the free key.
  ASSERT_TRUE(api.release(key, sid, kLockFlag, "", soon()));
  api.destroy_session(sid, soon());
  auto left = api.get(key, soon());
  ASSERT_TRUE(left);
  ASSERT_TRUE(api.delete_cas(key, left->modify_index, soon()));
  auto again = s->try_acquire(single("job", Ms{1000}), soon());
  ASSERT_TRUE(again);
  EXPECT_GT(again.lease->fencing_token, ours.lease->fencing_token);
  EXPECT_EQ(s->release(*again.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ConsulLockLayout, TenantSeparatorsBecomeFoldersAndGroupsUseSlotKeys) {
  DoubleServer d;
  auto s = d.store();
  auto t = s->try_acquire(single("tenant:acme:job", Ms{5000}), soon());
  ASSERT_TRUE(t);
  EXPECT_TRUE(s->api().get("it/tenant/acme/job/.lock", soon()));
  auto g0 = s->try_acquire(single("grp", Ms{5000}, 2), soon());
  auto g1 = s->try_acquire(single("grp", Ms{5000}, 2), soon());
  ASSERT_TRUE(g0 && g1);
  EXPECT_EQ(g0.lease->slot, 0);
  EXPECT_EQ(g1.lease->slot, 1);
  EXPECT_TRUE(s->api().get("it/grp/.slot-1", soon()));
  EXPECT_FALSE(s->try_acquire(single("grp", Ms{5000}, 2), soon()));
  // A single leader on "tenant" is independent of "tenant:acme:job" below it.
  auto parent = s->try_acquire(single("tenant", Ms{5000}), soon());
  ASSERT_TRUE(parent);
  for (const auto* l : {&t, &g0, &g1, &parent})
    EXPECT_EQ(s->release(*l->lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST(ConsulLockLayout, KeepForLeavesTheKeyWithAnUnrenewedSessionOfThatTtl) {
  DoubleServer d({"--ttl-multiplier", "1"});
  auto s = d.store();
  auto g = s->try_acquire(single("keep", Ms{5000}), soon());
  ASSERT_TRUE(g);
  EXPECT_EQ(s->release(*g.lease, Ms{300}, soon()), LeaseStatus::ok);
  EXPECT_FALSE(d.store()->try_acquire(single("keep", Ms{1000}), soon())) << "freed at once";
  std::optional<Lease> next;
  for (int i = 0; i < 100 && !next; ++i) {
    std::this_thread::sleep_for(Ms{30});
    if (auto n = d.store()->try_acquire(single("keep", Ms{1000}), soon())) next = *n.lease;
  }
  ASSERT_TRUE(next) << "never freed after keep_for";
  EXPECT_GT(next->fencing_token, g.lease->fencing_token);
}

}  // namespace
}  // namespace leader::consul::test
