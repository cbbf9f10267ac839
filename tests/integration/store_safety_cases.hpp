#pragma once
// Store-level safety cases shared by the SQL stores' integration tests (issue 10): the same owner
// re-acquiring returns its own lease (decision 1), the group size is per lock (decision 2), and a
// renewal sets the server expiry to now + ttl exactly, judged by a second client (defect 1).
// Each function takes a factory of independent clients of one backend and a fresh lock name.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "leader/leader.hpp"

namespace leader::testing {

using OpenStore = std::function<std::shared_ptr<LeaseStore>()>;

inline LeaseRequest safety_request(const std::string& lock, Duration ttl, int slots = 0,
                                   std::string owner = new_owner_token()) {
  return {lock, std::move(owner), "safety-node", ttl, slots};
}

inline Deadline safety_deadline() { return Deadline::after(std::chrono::seconds(5)); }

/// The owner of a live lease asks again (single lease): same token, same slot, expiry reset to
/// now + the new ttl (longer, then shorter); another owner still contends.
inline void same_owner_reacquires_its_single_lease(const OpenStore& open, const std::string& lock) {
  using namespace std::chrono_literals;
  auto store = open();
  auto first = store->try_acquire(safety_request(lock, 2s), safety_deadline());
  ASSERT_TRUE(first);
  auto again =
      store->try_acquire(safety_request(lock, 20s, 0, first.lease->owner), safety_deadline());
  ASSERT_TRUE(again) << "the owner of a live lease was refused";
  EXPECT_EQ(again.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(again.lease->slot, 0);
  auto state = open()->inspect(lock, safety_deadline());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_GT(state.holders[0].expires_in, 10s) << "expiry not reset to now + the new ttl";
  EXPECT_FALSE(open()->try_acquire(safety_request(lock, 2s), safety_deadline()));
  auto shorter =
      store->try_acquire(safety_request(lock, 1s, 0, first.lease->owner), safety_deadline());
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter.lease->fencing_token, first.lease->fencing_token);
  state = open()->inspect(lock, safety_deadline());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_LE(state.holders[0].expires_in, 1s) << "a shorter ttl did not shorten the expiry";
  EXPECT_EQ(store->release(*shorter.lease, Duration{0}, safety_deadline()), LeaseStatus::ok);
}

/// The owner of a group slot asks again: the same slot and token, never a second slot.
inline void same_owner_reacquires_its_group_slot(const OpenStore& open, const std::string& lock) {
  using namespace std::chrono_literals;
  auto store = open();
  auto other = store->try_acquire(safety_request(lock, 20s, 3), safety_deadline());
  ASSERT_TRUE(other);
  auto mine = store->try_acquire(safety_request(lock, 20s, 3), safety_deadline());
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine.lease->slot, 1);
  auto again =
      open()->try_acquire(safety_request(lock, 20s, 3, mine.lease->owner), safety_deadline());
  ASSERT_TRUE(again);
  EXPECT_EQ(again.lease->slot, mine.lease->slot);
  EXPECT_EQ(again.lease->fencing_token, mine.lease->fencing_token);
  EXPECT_EQ(open()->inspect(lock, safety_deadline()).holders.size(), 2u)
      << "the same owner got a second slot";
}

/// Expects `request` to be refused with failed_precondition naming both group sizes.
inline void expect_group_size_refused(LeaseStore& store, const LeaseRequest& request,
                                      const std::string& held, const std::string& asked) {
  try {
    auto got = store.try_acquire(request, safety_deadline());
    ADD_FAILURE() << "no error; "
                  << (got ? "granted slot " + std::to_string(got.lease->slot)
                          : std::string("contention"))
                  << " for " << asked << " while held as " << held;
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("held as " + held), std::string::npos) << what;
    EXPECT_NE(what.find("asks for " + asked), std::string::npos) << what;
  }
}

/// A single leader and a group cannot share a name while either has a live holder; the new
/// size applies once the holders are gone (released or expired).
inline void group_size_is_per_lock_single_vs_group(const OpenStore& open, const std::string& lock) {
  using namespace std::chrono_literals;
  auto store = open();
  auto single = store->try_acquire(safety_request(lock, 1s), safety_deadline());
  ASSERT_TRUE(single);
  expect_group_size_refused(*open(), safety_request(lock, 20s, 2), "a single leader",
                            "a group of 2 slots");
  expect_group_size_refused(*open(), safety_request(lock, 20s, 1), "a single leader",
                            "a group of 1 slot");
  std::this_thread::sleep_for(1200ms);  // the single lease expires on the server
  auto group = open()->try_acquire(safety_request(lock, 20s, 2), safety_deadline());
  ASSERT_TRUE(group) << "the new size was refused after the holder expired";
  expect_group_size_refused(*open(), safety_request(lock, 20s), "a group of 2 slots",
                            "a single leader");
  EXPECT_EQ(open()->release(*group.lease, Duration{0}, safety_deadline()), LeaseStatus::ok);
  EXPECT_TRUE(open()->try_acquire(safety_request(lock, 20s), safety_deadline()))
      << "the new size was refused after the holder released";
}

/// Groups of 2 and 3 on one name: the second size is refused while a member is live, also when
/// every slot is taken (an error, not contention), and applies once all members are gone.
inline void group_size_is_per_lock_two_vs_three(const OpenStore& open, const std::string& lock) {
  using namespace std::chrono_literals;
  auto store = open();
  auto a = store->try_acquire(safety_request(lock, 20s, 2), safety_deadline());
  auto b = store->try_acquire(safety_request(lock, 20s, 2), safety_deadline());
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  expect_group_size_refused(*open(), safety_request(lock, 20s, 3), "a group of 2 slots",
                            "a group of 3 slots");
  EXPECT_EQ(store->release(*a.lease, Duration{0}, safety_deadline()), LeaseStatus::ok);
  expect_group_size_refused(*open(), safety_request(lock, 20s, 3), "a group of 2 slots",
                            "a group of 3 slots");
  EXPECT_EQ(open()->inspect(lock, safety_deadline()).holders.size(), 1u);
  EXPECT_EQ(store->release(*b.lease, Duration{0}, safety_deadline()), LeaseStatus::ok);
  for (int i = 0; i < 3; ++i) {
    auto got = open()->try_acquire(safety_request(lock, 20s, 3), safety_deadline());
    ASSERT_TRUE(got) << "member " << i << " of the new group of 3 was refused";
    EXPECT_EQ(got.lease->slot, i);
  }
}

/// Polls with a second client until it acquires; returns when it did (or `limit` passed).
inline std::chrono::steady_clock::time_point first_takeover(LeaseStore& observer,
                                                            const std::string& lock,
                                                            std::chrono::milliseconds limit) {
  using namespace std::chrono_literals;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    if (observer.try_acquire(safety_request(lock, 10s), safety_deadline()))
      return std::chrono::steady_clock::now();
    std::this_thread::sleep_for(10ms);
  }
  return std::chrono::steady_clock::time_point::max();
}

/// renew(ttl) sets the server expiry to now + ttl, shorter or longer than before, as a second
/// client polling try_acquire sees it (the server is the judge).
inline void renew_sets_expiry_to_now_plus_ttl(const OpenStore& open, const std::string& lock) {
  using namespace std::chrono_literals;
  using Steady = std::chrono::steady_clock;
  auto holder = open();
  auto observer = open();
  (void)observer->inspect(lock, safety_deadline());  // connected before timing starts
  auto got = holder->try_acquire(safety_request(lock, 30s), safety_deadline());
  ASSERT_TRUE(got);
  Lease lease = *got.lease;
  const auto shorter_sent = Steady::now();
  ASSERT_EQ(holder->renew(lease, 1s, safety_deadline()).status, LeaseStatus::ok);
  const auto taken = first_takeover(*observer, lock, 5000ms);
  ASSERT_NE(taken, Steady::time_point::max()) << "a renewal to 1s left the 30s lease in place";
  // The server's lease may not end before the local one (sent time + ttl) ...
  EXPECT_GE(taken - shorter_sent, 1s - 2ms);
  // ... and ends right after it, not at the old 30 s.
  EXPECT_LT(taken - shorter_sent, 1s + 600ms);

  const std::string longer_lock = lock + "-longer";
  auto second = holder->try_acquire(safety_request(longer_lock, 1s), safety_deadline());
  ASSERT_TRUE(second);
  Lease longer = *second.lease;
  const auto longer_sent = Steady::now();
  ASSERT_EQ(holder->renew(longer, 3s, safety_deadline()).status, LeaseStatus::ok);
  const auto later = first_takeover(*observer, longer_lock, 6000ms);
  ASSERT_NE(later, Steady::time_point::max());
  EXPECT_GE(later - longer_sent, 3s - 2ms) << "the longer renewal did not extend the lease";
  EXPECT_LT(later - longer_sent, 3s + 600ms);
}

}  // namespace leader::testing
