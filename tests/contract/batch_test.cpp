// Batched renewals (issue 14, target 1), on every store: LeaseStore::renew_batch renews each lease
// as renew() would, result i is lease i's alone (a lost lease in a batch is reported lost and no
// other), and each renewed lease's server expiry moves to (call start + its ttl). The server is the
// judge: outcomes are read back by another client's inspect and try_acquire. Then the electors'
// renewal scheduler, which batches the renewals of one store that fall due together: many
// auto-extended leases of one elector stay held, as another client sees them.

#include <algorithm>
#include <optional>
#include <thread>

#include "helpers.hpp"
#include "observer.hpp"

namespace leader::contract {
namespace {

LeaseRequest batch_request(const std::string& name, Ms ttl, int slots = 0) {
  return {name, new_owner_token(), test::unique_name("batch-node"), ttl, slots};
}

/// The judge's view of `lease`'s slot in its lock: its holder's owner and time left.
std::optional<Holder> slot_holder(LeaseStore& judge, const Lease& lease) {
  for (const auto& h : judge.inspect(lease.lock, soon()).holders)
    if (h.slot == lease.slot) return h;
  return std::nullopt;
}

TEST_P(ContractTest, RenewBatchRenewsEachLeaseAndReportsALostOneAloneExactly) {
  const Ms unit = backend().lease_unit;
  auto holder = store();
  auto rival = backend().open();
  auto judge = backend().open();
  // Five leases: four long (10 units; one of them a group slot), one short that a rival takes over.
  std::vector<Lease> leases;
  for (int i = 0; i < 5; ++i) {
    const bool lost = i == 2;
    const bool group = i == 3;
    auto got = holder->try_acquire(
        batch_request(lock("-" + std::to_string(i)), lost ? unit : unit * 10, group ? 2 : 0),
        soon());
    ASSERT_TRUE(got) << "lock " << i;
    leases.push_back(*got.lease);
  }
  std::optional<Lease> taken;
  ASSERT_TRUE(eventually(
      [&] {
        if (auto got = rival->try_acquire(batch_request(leases[2].lock, unit * 20), soon()))
          taken = *got.lease;
        return taken.has_value();
      },
      unit * 5))
      << "the short lease never expired on the server";

  // Per-lease ttls differ within the batch: lease 0 is shortened to 3 units, the others get 20.
  std::vector<RenewalRequest> batch;
  for (std::size_t i = 0; i < leases.size(); ++i)
    batch.push_back({&leases[i], i == 0 ? unit * 3 : unit * 20});
  const auto sent = SteadyClock::now();
  const auto out = holder->renew_batch(batch, soon());
  ASSERT_EQ(out.size(), leases.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].error) << "lease " << i << ": " << out[i].error->what();
    EXPECT_EQ(out[i].renewal.status, i == 2 ? LeaseStatus::lost : LeaseStatus::ok) << "lease " << i;
  }
  // The lost lease's new holder is untouched: still the rival, with its own 20 units.
  auto h = slot_holder(*judge, *taken);
  ASSERT_TRUE(h) << "the rival lost the lock it took over";
  EXPECT_EQ(h->owner, taken->owner);
  EXPECT_GT(h->expires_in, unit * 10);
  // Every other lease now ends about its own ttl after the batch (lease 0: shorter than the 10
  // units it had, so the batch set it; the others: longer).
  for (std::size_t i : {0U, 1U, 3U, 4U}) {
    auto mine = slot_holder(*judge, leases[i]);
    ASSERT_TRUE(mine) << "lease " << i << " lost its holder";
    EXPECT_EQ(mine->owner, leases[i].owner) << "lease " << i;
    // At most what was asked (a store may report a shorter grant than the expiry it keeps, as
    // ZooKeeper reports its session timeout), at least the grant.
    EXPECT_LE(mine->expires_in, batch[i].ttl + Ms{1000}) << "lease " << i;
    EXPECT_GE(mine->expires_in, out[i].renewal.ttl - unit) << "lease " << i;
  }
  // Not before (call start + ttl) on the server: a rival gets lease 0 only after that.
  std::optional<SteadyClock::time_point> at;
  ASSERT_TRUE(eventually(
      [&] {
        if (rival->try_acquire(batch_request(leases[0].lock, unit), soon()))
          at = SteadyClock::now();
        return at.has_value();
      },
      unit * 8))
      << "the batch-renewed lease never expired";
  EXPECT_GE(*at - sent, out[0].renewal.ttl - Ms{2});
  for (std::size_t i : {1U, 3U, 4U})
    EXPECT_EQ(holder->release(leases[i], Ms{0}, soon()), LeaseStatus::ok) << "lease " << i;
  EXPECT_EQ(rival->release(*taken, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_P(ContractTest, RenewBatchOfHundredsOfLeasesRenewsEveryOneAndAnEmptyBatchIsNothing) {
  const Ms unit = backend().lease_unit;
  auto holder = store();
  auto judge = backend().open();
  EXPECT_TRUE(holder->renew_batch({}, soon()).empty());
  std::vector<Lease> leases;
  for (int i = 0; i < 300; ++i) {
    auto got = holder->try_acquire(batch_request(lock("-" + std::to_string(i)), unit * 10), soon());
    ASSERT_TRUE(got) << "lock " << i;
    leases.push_back(*got.lease);
  }
  std::vector<RenewalRequest> batch;
  for (const Lease& l : leases) batch.push_back({&l, unit * 20});
  const auto out = holder->renew_batch(batch, test::soon(Ms{30000}));
  ASSERT_EQ(out.size(), leases.size());
  int ok = 0;
  for (const auto& r : out) ok += !r.error && r.renewal.status == LeaseStatus::ok ? 1 : 0;
  EXPECT_EQ(ok, 300);
  for (std::size_t i : {0U, 150U, 299U}) {  // about the 20 units granted, not the first 10
    auto mine = slot_holder(*judge, leases[i]);
    ASSERT_TRUE(mine) << "lease " << i;
    EXPECT_GE(mine->expires_in, out[i].renewal.ttl - unit * 3) << "lease " << i;
    EXPECT_GT(mine->expires_in, unit * 12) << "lease " << i;
  }
  for (const Lease& l : leases) (void)holder->release(l, Ms{0}, soon());
}

TEST_P(ContractTest, ManyAutoExtendedLeasesOfOneElectorStayHeldAsAnotherClientSees) {
  const Ms unit = backend().lease_unit;
  auto o = quick(backend());
  o.auto_extend = true;
  LeaderElector e(store(), o);
  std::vector<LeaseGuard> held;
  std::vector<std::string> names;
  for (int i = 0; i < 24; ++i) {  // acquired together: their renewals fall due together
    names.push_back(lock("-" + std::to_string(i)));
    auto got = e.acquire(names.back());
    ASSERT_TRUE(got.guard) << names.back();
    held.push_back(std::move(*got.guard));
  }
  auto rival = backend().open();
  const auto start = SteadyClock::now();
  int refused = 0;
  while (SteadyClock::now() - start < unit * 4) {  // four lease times: about ten renewals each
    for (const auto& n : names) {
      auto got = rival->try_acquire(batch_request(n, unit * 10), soon());
      ASSERT_FALSE(got) << n << ": the server let another owner in while it was renewed";
      ++refused;
    }
    std::this_thread::sleep_for(unit / 4);
  }
  EXPECT_GT(refused, 0);
  for (auto& g : held) EXPECT_TRUE(g.context().still_leader());
  held.clear();
  for (const auto& n : names) EXPECT_FALSE(rival->inspect(n, soon()).held()) << n;
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(batch)
