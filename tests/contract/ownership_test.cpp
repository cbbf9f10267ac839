// Who owns a lock (issue 10, COMMON decisions 1 and 2): an owner's retry after an unknown outcome
// gets its own lease back (defect 5), and a lock keeps the group size of its live holders: a
// request with a different size is refused with failed_precondition until the lock is free (defect
// 6).

#include "helpers.hpp"

namespace leader::contract {
namespace {

Deadline soon() { return Deadline::after(Ms{5000}); }

LeaseRequest request(const std::string& name, int slots, Ms ttl) {
  return {name, new_owner_token(), test::unique_name("own"), ttl, slots};
}

TEST_P(ContractTest, TryAcquireWithTheHoldersOwnerTokenReturnsTheSameLease) {
  const Ms lease = backend().lease_unit;
  auto name = lock();
  auto s = store();
  auto req = request(name, 0, lease);
  auto first = s->try_acquire(req, soon());
  ASSERT_TRUE(first);
  std::this_thread::sleep_for(lease / 2);
  req.ttl = lease * 3;  // the retry also resets the server expiry to now + its ttl
  auto again = s->try_acquire(req, soon());
  ASSERT_TRUE(again) << "the owner's retry contended with its own lease";
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, first.lease->slot);
  EXPECT_EQ(again.lease->owner, req.owner);
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, req.owner);
  // Past the first grant's expiry the lease is still held: the retry reset it.
  std::this_thread::sleep_for(lease * 3 / 4);
  auto other = backend().open()->try_acquire(request(name, 0, lease), soon());
  EXPECT_FALSE(other) << "another owner got the lock the retry had renewed";
  EXPECT_EQ(s->release(*again.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_P(ContractTest, GroupTryAcquireWithTheHoldersOwnerTokenReturnsTheSameSlot) {
  const Ms lease = backend().lease_unit * 5;
  auto name = lock();
  auto s = store();
  auto req = request(name, 3, lease);
  auto first = s->try_acquire(req, soon());
  ASSERT_TRUE(first);
  auto again = s->try_acquire(req, soon());
  ASSERT_TRUE(again) << "the owner's retry contended with its own slot";
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, first.lease->slot);
  auto state = s->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u) << "the retry took a second slot";
  auto other = backend().open()->try_acquire(request(name, 3, lease), soon());
  ASSERT_TRUE(other);
  EXPECT_NE(other.lease->slot, first.lease->slot);
  EXPECT_EQ(s->inspect(name, soon()).holders.size(), 2u);
  EXPECT_EQ(s->release(*again.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(s->release(*other.lease, Ms{0}, soon()), LeaseStatus::ok);
}

/// A request for `slots` on `name` is refused with failed_precondition (never granted, never
/// reported as contention).
void expect_refused(LeaseStore& s, const std::string& name, int slots, Ms ttl) {
  try {
    auto got = s.try_acquire(request(name, slots, ttl), soon());
    ADD_FAILURE() << "slots=" << slots << ": " << (got ? "granted" : "contention")
                  << " instead of failed_precondition";
    if (got) (void)s.release(*got.lease, Ms{0}, soon());
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << "slots=" << slots << ": " << e.what();
  }
}

/// Holds `name` with `slots`, checks every size in `refused` is refused, frees it.
void hold_and_refuse(const Backend& b, LeaseStore& s, const std::string& name, int slots,
                     std::initializer_list<int> refused) {
  const Ms ttl = b.lease_unit * 10;
  auto held = s.try_acquire(request(name, slots, ttl), soon());
  ASSERT_TRUE(held) << "slots=" << slots << " on a free lock";
  auto other = b.open();
  for (int r : refused) expect_refused(*other, name, r, ttl);
  EXPECT_EQ(s.release(*held.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_P(ContractTest, SingleAndGroupRequestsOnOneLockAreRefusedWhileTheOtherIsLive) {
  auto name = lock();
  auto s = store();
  hold_and_refuse(backend(), *s, name, 0, {2, 1});  // a group of one is not a single leader
  hold_and_refuse(backend(), *s, name, 2, {0});     // accepted once the single holder is gone
  hold_and_refuse(backend(), *s, name, 0, {3});     // and the single leader once the group is
}

TEST_P(ContractTest, GroupsOfDifferentSizesOnOneLockAreRefusedWhileTheOtherIsLive) {
  auto name = lock();
  auto s = store();
  hold_and_refuse(backend(), *s, name, 2, {3, 1});
  hold_and_refuse(backend(), *s, name, 3, {2});  // a redeploy with a new N works once free
}

}  // namespace
}  // namespace leader::contract
