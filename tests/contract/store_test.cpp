// Store-level cases every LeaseStore satisfies on its own (issue 13), below the electors: the
// lowest free slot of a group is taken, racing clients get distinct slots and never more than the
// group has, a candidate keeps its registered_at, a stale lease's renew and release are refused
// and leave the new holder untouched, release is idempotent, and renew sets the server expiry to
// now + ttl. The server is the judge: every outcome is read back by a second client's inspect or
// try_acquire, never from the acting client's own view.

#include <algorithm>
#include <latch>
#include <optional>
#include <set>
#include <thread>

#include "helpers.hpp"

namespace leader::contract {
namespace {

LeaseRequest request(const std::string& name, Ms ttl, int slots = 0) {
  return {name, new_owner_token(), test::unique_name("store-node"), ttl, slots};
}

/// `clients` independent clients, each connected (one inspect of `name`) before it is returned.
std::vector<std::shared_ptr<LeaseStore>> connected_clients(const Backend& b, int clients,
                                                           const std::string& name) {
  std::vector<std::shared_ptr<LeaseStore>> out;
  for (int i = 0; i < clients; ++i) {
    out.push_back(b.open());
    (void)out.back()->inspect(name, soon());
  }
  return out;
}

TEST_P(ContractTest, GroupSlotsAreTakenLowestFreeFirstEachWithAHigherToken) {
  const Ms ttl = backend().lease_unit * 10;
  auto name = lock();
  auto clients = connected_clients(backend(), 4, name);  // kept open: a closed client's leases
                                                         // may end with its session
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) {
    auto got = clients[i]->try_acquire(request(name, ttl, 3), soon());
    ASSERT_TRUE(got) << "member " << i << " of a group of 3 was refused";
    EXPECT_EQ(got.lease->slot, i) << "not the lowest free slot";
    EXPECT_EQ(got.lease->slots, 3);
    if (!held.empty()) {
      EXPECT_GT(got.lease->fencing_token, held.back().fencing_token);
    }
    held.push_back(*got.lease);
  }
  EXPECT_FALSE(clients[3]->try_acquire(request(name, ttl, 3), soon())) << "a fourth member";
  ASSERT_EQ(clients[1]->release(held[1], Ms{0}, soon()), LeaseStatus::ok);
  ASSERT_EQ(clients[0]->release(held[0], Ms{0}, soon()), LeaseStatus::ok);
  auto low = clients[3]->try_acquire(request(name, ttl, 3), soon());
  ASSERT_TRUE(low);
  EXPECT_EQ(low.lease->slot, 0) << "slots 0 and 1 were free";
  EXPECT_GT(low.lease->fencing_token, held[2].fencing_token);
  auto next = clients[0]->try_acquire(request(name, ttl, 3), soon());
  ASSERT_TRUE(next);
  EXPECT_EQ(next.lease->slot, 1);
  EXPECT_GT(next.lease->fencing_token, low.lease->fencing_token);
  auto state = backend().open()->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), 3u);
  const std::vector<const Lease*> by_slot{&*low.lease, &*next.lease, &held[2]};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(state.holders[i].slot, i);
    EXPECT_EQ(state.holders[i].owner, by_slot[i]->owner) << "slot " << i;
    EXPECT_EQ(state.holders[i].fencing_token, by_slot[i]->fencing_token) << "slot " << i;
  }
  (void)clients[3]->release(*low.lease, Ms{0}, soon());
  (void)clients[0]->release(*next.lease, Ms{0}, soon());
  (void)clients[2]->release(held[2], Ms{0}, soon());
}

/// Each of `clients` tries once, all at the same moment; returns what each got (errors fail).
std::vector<std::optional<Lease>> race(const std::vector<std::shared_ptr<LeaseStore>>& clients,
                                       const std::string& name, Ms ttl, int slots) {
  const int n = static_cast<int>(clients.size());
  std::latch go(n);
  std::vector<std::optional<Lease>> got(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      try {
        auto a = clients[i]->try_acquire(request(name, ttl, slots), soon());
        if (a) got[i] = *a.lease;
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_EQ(e, "") << "contention must be a value, not an error";
  return got;
}

TEST_P(ContractTest, ClientsRacingForAGroupGetDistinctSlotsAndNeverMoreThanItHas) {
  constexpr int kSlots = 3;
  constexpr int kClients = 6;
  const Ms ttl = backend().lease_unit * 10;
  auto name = lock();
  auto clients = connected_clients(backend(), kClients, name);
  auto got = race(clients, name, ttl, kSlots);
  std::set<int> slots;
  int granted = 0;
  for (const auto& g : got) {
    if (!g) continue;
    ++granted;
    EXPECT_GE(g->slot, 0);
    EXPECT_LT(g->slot, kSlots);
    slots.insert(g->slot);
  }
  EXPECT_EQ(static_cast<int>(slots.size()), granted) << "two clients were granted one slot";
  EXPECT_LE(granted, kSlots);
  EXPECT_GE(granted, 1) << "nobody won a race for a free group";
  auto judge = backend().open();
  EXPECT_EQ(static_cast<int>(judge->inspect(name, soon()).holders.size()), granted);
  // Whatever the race left is still free, and then the group is full.
  for (int i = granted; i < kSlots; ++i)
    EXPECT_TRUE(judge->try_acquire(request(name, ttl, kSlots), soon())) << "slot left " << i;
  EXPECT_FALSE(judge->try_acquire(request(name, ttl, kSlots), soon()));
  auto state = judge->inspect(name, soon());
  ASSERT_EQ(state.holders.size(), static_cast<std::size_t>(kSlots));
  for (int i = 0; i < kSlots; ++i) EXPECT_EQ(state.holders[i].slot, i);

  // The same race for a single lease has at most one winner.
  auto single = lock("-single");
  auto winners = race(clients, single, ttl, 0);
  EXPECT_LE(
      std::count_if(winners.begin(), winners.end(), [](const auto& w) { return w.has_value(); }),
      1);
  EXPECT_LE(judge->inspect(single, soon()).holders.size(), 1u);
}

TEST_P(ContractTest, ACandidateKeepsItsRegisteredAtWhenItRegistersAgain) {
  using std::chrono::system_clock;
  auto grp = lock("-grp");
  const Ms ttl = backend().lease_unit * 20;
  auto a = store();
  auto b = backend().open();
  const auto before = system_clock::now();
  Candidate c{"cand-a", {}, 3, 1, before - std::chrono::seconds(5), {{"zone", "a\"b"}}};
  a->put_candidate(grp, c, ttl, soon());
  auto first = b->list_candidates(grp, soon());
  ASSERT_EQ(first.size(), 1u);
  EXPECT_LT(std::chrono::abs(first[0].registered_at - before), std::chrono::minutes(1))
      << "registered_at was not set by the store";
  // Past a whole second, so a store keeping seconds that rewrote it would show.
  std::this_thread::sleep_for(Ms{1100});
  c.successes = 4;
  c.failures = 2;
  c.last_completion = system_clock::now();
  c.metadata = {{"zone", "b"}, {"w", "2"}};
  c.registered_at = before - std::chrono::hours(1);  // a caller's value never replaces it
  b->put_candidate(grp, c, ttl, soon());             // from another client
  auto second = a->list_candidates(grp, soon());
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].node_id, "cand-a");
  EXPECT_EQ(second[0].registered_at, first[0].registered_at);
  EXPECT_EQ(second[0].successes, 4u);
  EXPECT_EQ(second[0].failures, 2u);
  EXPECT_EQ(second[0].metadata, c.metadata);
  ASSERT_TRUE(second[0].last_completion.has_value());
  EXPECT_LT(std::chrono::abs(*second[0].last_completion - *c.last_completion), Ms{1});
  a->remove_candidate(grp, "cand-a", soon());
  EXPECT_NO_THROW(b->remove_candidate(grp, "cand-a", soon()));
  EXPECT_TRUE(b->list_candidates(grp, soon()).empty());
}

/// The judge's view of the one holder of `slot` in `name`, which must be `lease`'s owner.
void expect_holder(LeaseStore& judge, const std::string& name, const Lease& lease, Ms min_left,
                   Ms max_left) {
  auto state = judge.inspect(name, soon());
  const Holder* h = nullptr;
  for (const auto& x : state.holders)
    if (x.slot == lease.slot) h = &x;
  ASSERT_NE(h, nullptr) << name << ": slot " << lease.slot << " lost its holder";
  EXPECT_EQ(h->owner, lease.owner) << name;
  EXPECT_EQ(h->node_id, lease.node_id) << name;
  EXPECT_EQ(h->fencing_token, lease.fencing_token) << name;
  EXPECT_GT(h->expires_in, min_left) << name << ": the expiry was shortened";
  EXPECT_LE(h->expires_in, max_left) << name << ": the expiry was extended";
}

TEST_P(ContractTest, AStaleLeasesRenewAndReleaseAreRefusedAndTheNewHolderIsUntouched) {
  const Ms lease = backend().lease_unit;
  auto single = lock("-single");
  auto group = lock("-group");
  auto old_client = store();
  auto new_client = backend().open();
  auto judge = backend().open();
  auto s_old = old_client->try_acquire(request(single, lease), soon());
  auto g_old = old_client->try_acquire(request(group, lease, 2), soon());
  ASSERT_TRUE(s_old && g_old);
  ASSERT_EQ(g_old.lease->slot, 0);
  auto filler = new_client->try_acquire(request(group, lease * 10, 2), soon());
  ASSERT_TRUE(filler);  // slot 1: the next member can only take the old holder's slot 0
  std::optional<Lease> s_new;
  std::optional<Lease> g_new;
  ASSERT_TRUE(eventually(
      [&] {
        if (!s_new)
          if (auto got = new_client->try_acquire(request(single, lease * 10), soon()))
            s_new = *got.lease;
        if (!g_new)
          if (auto got = new_client->try_acquire(request(group, lease * 10, 2), soon()))
            g_new = *got.lease;
        return s_new && g_new;
      },
      lease * 5))
      << "the old leases never expired on the server";
  EXPECT_GT(s_new->fencing_token, s_old.lease->fencing_token);
  EXPECT_EQ(g_new->slot, g_old.lease->slot);
  EXPECT_GT(g_new->fencing_token, g_old.lease->fencing_token);
  for (const Lease* stale : {&*s_old.lease, &*g_old.lease}) {
    EXPECT_EQ(old_client->renew(*stale, lease * 20, soon()).status, LeaseStatus::lost)
        << stale->lock;
    EXPECT_EQ(old_client->release(*stale, lease, soon()), LeaseStatus::lost) << stale->lock;
    EXPECT_EQ(old_client->release(*stale, Ms{0}, soon()), LeaseStatus::lost) << stale->lock;
  }
  // Neither the stale renew (20 units) nor the stale keep_for release (1 unit) moved the expiry.
  expect_holder(*judge, single, *s_new, lease * 5, lease * 10 + Ms{1000});
  expect_holder(*judge, group, *g_new, lease * 5, lease * 10 + Ms{1000});
  expect_holder(*judge, group, *filler.lease, lease * 5, lease * 10 + Ms{1000});
  EXPECT_EQ(new_client->renew(*s_new, lease * 10, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(new_client->release(*s_new, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(new_client->release(*g_new, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(new_client->release(*filler.lease, Ms{0}, soon()), LeaseStatus::ok);
}

TEST_P(ContractTest, ReleasingTwiceOrAfterExpiryIsNoErrorAndLeavesTheNextHolderAlone) {
  const Ms lease = backend().lease_unit;
  auto name = lock();
  auto expiring = lock("-expiring");
  auto a = store();
  auto b = backend().open();
  auto judge = backend().open();
  auto mine = a->try_acquire(request(name, lease * 10), soon());
  auto short_lived = a->try_acquire(request(expiring, lease), soon());
  ASSERT_TRUE(mine && short_lived);
  EXPECT_EQ(a->release(*mine.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_NO_THROW((void)a->release(*mine.lease, Ms{0}, soon()));
  EXPECT_FALSE(judge->inspect(name, soon()).held());
  auto next = b->try_acquire(request(name, lease * 10), soon());
  ASSERT_TRUE(next) << "a second release left the lock held";
  LeaseStatus third = LeaseStatus::ok;
  EXPECT_NO_THROW(third = a->release(*mine.lease, Ms{0}, soon()));
  EXPECT_EQ(third, LeaseStatus::lost) << "the lock moved on: the old lease is not ours";
  expect_holder(*judge, name, *next.lease, lease * 5, lease * 10 + Ms{1000});

  ASSERT_TRUE(eventually([&] { return !judge->inspect(expiring, soon()).held(); }, lease * 5))
      << "the short lease never expired on the server";
  EXPECT_NO_THROW((void)a->release(*short_lived.lease, Ms{0}, soon()));
  EXPECT_FALSE(judge->inspect(expiring, soon()).held());
  auto after = b->try_acquire(request(expiring, lease * 10), soon());
  ASSERT_TRUE(after) << "releasing an expired lease blocked the lock";
  EXPECT_EQ(a->release(*short_lived.lease, Ms{0}, soon()), LeaseStatus::lost);
  expect_holder(*judge, expiring, *after.lease, lease * 5, lease * 10 + Ms{1000});
  EXPECT_EQ(b->release(*next.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(b->release(*after.lease, Ms{0}, soon()), LeaseStatus::ok);
}

/// Polls with `observer` until `lock` is acquired by it; the time that happened, or max.
SteadyClock::time_point first_takeover(LeaseStore& observer, const std::string& name, Ms limit) {
  const auto start = SteadyClock::now();
  while (SteadyClock::now() - start < limit) {
    if (observer.try_acquire(request(name, limit), soon())) return SteadyClock::now();
    std::this_thread::sleep_for(Ms{10});
  }
  return SteadyClock::time_point::max();
}

TEST_P(ContractTest, RenewSetsTheServerExpiryToNowPlusTheNewTtlShorterOrLonger) {
  const Ms unit = backend().lease_unit;
  auto shorter = lock("-shorter");
  auto longer = lock("-longer");
  auto holder = store();
  auto observer = backend().open();
  (void)observer->inspect(shorter, soon());  // connected before timing starts
  auto s = holder->try_acquire(request(shorter, unit * 30), soon());
  auto l = holder->try_acquire(request(longer, unit), soon());
  ASSERT_TRUE(s && l);
  const auto shorter_sent = SteadyClock::now();
  const Renewal down = holder->renew(*s.lease, unit, soon());
  ASSERT_EQ(down.status, LeaseStatus::ok);
  const auto longer_sent = SteadyClock::now();
  const Renewal up = holder->renew(*l.lease, unit * 3, soon());
  ASSERT_EQ(up.status, LeaseStatus::ok);
  const auto taken = first_takeover(*observer, shorter, unit * 5);
  ASSERT_NE(taken, SteadyClock::time_point::max()) << "a renewal to 1 unit left 30 in place";
  // Not before the holder's own view of its lease ends (sent + granted ttl) ...
  EXPECT_GE(taken - shorter_sent, down.ttl - Ms{2});
  // ... and soon after it, not at the old 30 units (a bound only against a hang).
  EXPECT_LT(taken - shorter_sent, unit * 3);
  const auto later = first_takeover(*observer, longer, unit * 8);
  ASSERT_NE(later, SteadyClock::time_point::max());
  EXPECT_GE(later - longer_sent, up.ttl - Ms{2}) << "the longer renewal did not extend the lease";
  EXPECT_LT(later - longer_sent, unit * 6);
}

}  // namespace
}  // namespace leader::contract

LEADER_CONTRACT_CASE_FILE(store)
