// leader::list_locks (for `leader list`): the memory store lists the live holders under a prefix,
// ordered by name, and leaves out expired leases; a store that is no LockLister says so by code.
#include <gtest/gtest.h>

#include <string>

#include "leader/errors.hpp"
#include "leader/lock_listing.hpp"
#include "leader/names.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

Deadline soon() { return Deadline::after(1s); }

TEST(ListLocks, MemoryStoreListsLiveHoldersUnderAPrefixInNameOrder) {
  auto clock = std::make_shared<FakeClock>();
  auto store = make_memory_store({clock});
  auto take = [&](const std::string& lock, Duration ttl, int slots = 0) {
    auto got = store->try_acquire({lock, new_owner_token(), "node-" + lock, ttl, slots}, soon());
    ASSERT_TRUE(got);
  };
  take("app-b", 10s);
  take("app-a", 10s);
  take("app-a-short", 1s);
  take("other", 10s);
  take("pool", 10s, 3);
  take("pool", 10s, 3);
  auto all = list_locks(*store, "", soon());
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].lock, "app-a");
  EXPECT_EQ(all[4].lock, "pool");
  EXPECT_EQ(all[4].holders.size(), 2u);
  EXPECT_EQ(all[4].holders[1].slot, 1);
  auto app = list_locks(*store, "app-", soon());
  ASSERT_EQ(app.size(), 3u);
  EXPECT_EQ(app[0].holders.at(0).node_id, "node-app-a");
  EXPECT_GT(app[0].holders.at(0).fencing_token, 0u);
  clock->advance(2s);
  app = list_locks(*store, "app-", soon());
  ASSERT_EQ(app.size(), 2u) << "the expired app-a-short is not listed";
  EXPECT_EQ(app[1].lock, "app-b");
  EXPECT_TRUE(list_locks(*store, "zzz", soon()).empty());
}

// A store that is no LockLister.
class NoListStore : public LeaseStore {
 public:
  std::string_view scheme() const override { return "nolist"; }
  Acquired try_acquire(const LeaseRequest&, Deadline) override { return {}; }
  Renewal renew(const Lease&, Duration, Deadline) override { return {}; }
  LeaseStatus release(const Lease&, Duration, Deadline) override { return LeaseStatus::lost; }
  LockState inspect(std::string_view, Deadline) override { return {}; }
  void put_candidate(std::string_view, const Candidate&, Duration, Deadline) override {}
  std::vector<Candidate> list_candidates(std::string_view, Deadline) override { return {}; }
  void remove_candidate(std::string_view, std::string_view, Deadline) override {}
};

TEST(ListLocks, AStoreWithoutItSaysNotSupportedWithFailedPrecondition) {
  NoListStore store;
  try {
    (void)list_locks(store, "", soon());
    ADD_FAILURE() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_EQ(e.store(), "nolist");
    EXPECT_NE(std::string(e.what()).find("listing locks is not supported by the nolist store"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace leader
