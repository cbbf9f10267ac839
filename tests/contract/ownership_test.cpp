// Who owns a lock (issue 10, COMMON decisions 1 and 2): an owner's retry after an unknown outcome
// gets its own lease back (defect 5), and a lock keeps the group size of its live holders: a
// request with a different size is refused with failed_precondition until the lock is free (defect
// 6).

#include "helpers.hpp"
#include "leader/detail/group_size.hpp"

namespace leader::contract {
namespace {

LeaseRequest request(const std::string& name, int slots, Ms ttl) {
  return {name, new_owner_token(), test::unique_name("own"), ttl, slots};
}

TEST_P(ContractTest, TryAcquireWithTheHoldersOwnerTokenReturnsTheSameLease) {
  const Ms lease = backend().lease_unit;
  auto name = lock();
  auto s = store();
  auto judge = backend().open();
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
  auto state = judge->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, req.owner);
  EXPECT_GT(state.holders[0].expires_in, lease * 2) << "expiry not reset to now + the new ttl";
  // Past the first grant's expiry the lease is still held: the retry reset it.
  std::this_thread::sleep_for(lease * 3 / 4);
  EXPECT_FALSE(judge->try_acquire(request(name, 0, lease), soon()))
      << "another owner got the lock the retry had renewed";
  req.ttl = lease / 2;  // a shorter retry shortens the expiry as well
  auto shorter = s->try_acquire(req, soon());
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter.lease->fencing_token, first.lease->fencing_token);
  state = judge->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  // etcd counts whole seconds: half a unit is granted as 1 s and inspect() rounds what is left up
  // to the next second; the earlier retry's lease would still show 3 units.
  const Ms shortened = backend().name == "etcd" ? lease * 2 : lease / 2;
  EXPECT_LE(state.holders[0].expires_in, shortened) << "a shorter ttl did not shorten the expiry";
  EXPECT_EQ(s->release(*shorter.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_P(ContractTest, GroupTryAcquireWithTheHoldersOwnerTokenReturnsTheSameSlot) {
  const Ms lease = backend().lease_unit * 5;
  auto name = lock();
  auto s = store();
  auto retrier = backend().open();  // the retry may come from another connection
  auto other_client = backend().open();
  auto first_member = other_client->try_acquire(request(name, 3, lease), soon());
  ASSERT_TRUE(first_member);
  auto req = request(name, 3, lease);
  auto first = s->try_acquire(req, soon());
  ASSERT_TRUE(first);
  EXPECT_EQ(first.lease->slot, 1);
  auto again = retrier->try_acquire(req, soon());
  ASSERT_TRUE(again) << "the owner's retry contended with its own slot";
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, first.lease->slot);
  auto state = other_client->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 2u) << "the retry took a second slot";
  auto other = other_client->try_acquire(request(name, 3, lease), soon());
  ASSERT_TRUE(other);
  EXPECT_EQ(other.lease->slot, 2);
  EXPECT_FALSE(other_client->try_acquire(request(name, 3, lease), soon()));
  EXPECT_EQ(s->release(*again.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(other_client->release(*other.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(other_client->release(*first_member.lease, Ms{0}, soon()), LeaseStatus::ok);
}

/// A request for `slots` on `name`, held as `held` slots, is refused with failed_precondition
/// naming the lock and both sizes (never granted, never reported as contention).
void expect_refused(LeaseStore& s, const std::string& name, int held, int slots, Ms ttl) {
  try {
    auto got = s.try_acquire(request(name, slots, ttl), soon());
    ADD_FAILURE() << "slots=" << slots << ": " << (got ? "granted" : "contention")
                  << " instead of failed_precondition";
    if (got) (void)s.release(*got.lease, Ms{0}, soon());
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << "slots=" << slots << ": " << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + name + "' is held as " + detail::describe_group_size(held)),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("asks for " + detail::describe_group_size(slots)), std::string::npos)
        << what;
  }
}

/// How the holder of `hold_and_refuse` goes away.
enum class Ends { released, expired };

/// Holds `name` with `slots`, checks every size in `refused` is refused, then frees it (a release,
/// or a short lease left to expire on the server).
void hold_and_refuse(const Backend& b, LeaseStore& s, const std::string& name, int slots,
                     std::initializer_list<int> refused, Ends ends = Ends::released) {
  const Ms ttl = ends == Ends::expired ? b.lease_unit : b.lease_unit * 10;
  auto held = s.try_acquire(request(name, slots, ttl), soon());
  ASSERT_TRUE(held) << "slots=" << slots << " on a free lock";
  auto other = b.open();
  for (int r : refused) expect_refused(*other, name, slots, r, ttl);
  if (ends == Ends::released) {
    EXPECT_EQ(s.release(*held.lease, Ms{0}, soon()), LeaseStatus::ok);
  } else {
    EXPECT_TRUE(eventually([&] { return !other->inspect(name, soon()).held(); }, b.lease_unit * 5));
  }
}

TEST_P(ContractTest, SingleAndGroupRequestsOnOneLockAreRefusedWhileTheOtherIsLive) {
  auto name = lock();
  auto s = store();
  hold_and_refuse(backend(), *s, name, 0, {2, 1});  // a group of one is not a single leader
  hold_and_refuse(backend(), *s, name, 2, {0});     // accepted once the single holder is gone
  // and the single leader once the group is gone; after an expiry too: an expired single lease
  // no longer counts (k8s: the group's token draw frees it instead of making it look renewed)
  hold_and_refuse(backend(), *s, name, 0, {3}, Ends::expired);
  hold_and_refuse(backend(), *s, name, 2, {0});
}

TEST_P(ContractTest, GroupsOfDifferentSizesOnOneLockAreRefusedWhileTheOtherIsLive) {
  auto name = lock();
  auto s = store();
  hold_and_refuse(backend(), *s, name, 2, {3, 1});
  hold_and_refuse(backend(), *s, name, 3, {2});  // a redeploy with a new N works once free
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(ownership)
