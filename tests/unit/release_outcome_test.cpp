// LeaseGuard::release() reports the store's failure to release, so a caller that must answer for
// the release (the sidecar's DELETE) hears it; the lease then stays held until its ttl.

#include <gtest/gtest.h>

#include <chrono>
#include <exception>

#include "leader/elector.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

ElectionOptions quick() { return {.wait_time = 0s, .lease_time = 5s, .node_id = "releaser"}; }

TEST(ReleaseOutcome, AReleaseTheStoreConfirmsReportsNothingAndFreesTheLock) {
  auto store = make_memory_store();
  LeaderElector elector(store, quick());
  Acquisition got = elector.acquire("job");
  ASSERT_TRUE(got);
  EXPECT_EQ(got.guard->release(), nullptr);
  EXPECT_FALSE(store->inspect("job", Deadline::after(1s)).held());
  EXPECT_EQ(got.guard->release(), nullptr) << "a second release has nothing to report";
}

TEST(ReleaseOutcome, AFailedReleaseIsReportedAsTheStoresErrorAndTheLeaseStaysHeld) {
  auto store = make_memory_store();
  LeaderElector elector(store, quick());
  Acquisition got = elector.acquire("job");
  ASSERT_TRUE(got);
  set_memory_store_unavailable(*store, true);
  const std::exception_ptr failure = got.guard->release();
  set_memory_store_unavailable(*store, false);
  ASSERT_NE(failure, nullptr);
  try {
    std::rethrow_exception(failure);
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  EXPECT_TRUE(store->inspect("job", Deadline::after(1s)).held())
      << "the store never heard the release: the lease runs out at its ttl";
  EXPECT_EQ(got.guard->release(), nullptr) << "the lease already ended here";
}

TEST(ReleaseOutcome, AbandoningLeavesTheLeaseOnTheStoreAndAReleaseAfterItReportsNothing) {
  auto store = make_memory_store();
  LeaderElector elector(store, quick());
  Acquisition got = elector.acquire("job");
  ASSERT_TRUE(got);
  got.guard->abandon();
  EXPECT_TRUE(store->inspect("job", Deadline::after(1s)).held());
  EXPECT_EQ(got.guard->release(), nullptr);
}

}  // namespace
}  // namespace leader
