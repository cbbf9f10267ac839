// LeaseGuard::release() reports the store's failure to release, so a caller that must answer for
// the release (the sidecar's DELETE) hears it; the lease then stays held until its ttl.

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <memory>

#include "leader/elector.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

// A lease of "job" held on a memory store.
struct ReleaseOutcome : ::testing::Test {
  std::shared_ptr<LeaseStore> store = make_memory_store();
  LeaderElector elector{store, {.wait_time = 0s, .lease_time = 5s, .node_id = "releaser"}};
  Acquisition got = elector.acquire("job");
  [[nodiscard]] bool held() const { return store->inspect("job", Deadline::after(1s)).held(); }
};

TEST_F(ReleaseOutcome, AReleaseTheStoreConfirmsReportsNothingAndFreesTheLock) {
  ASSERT_TRUE(got);
  EXPECT_EQ(got.guard->release(), nullptr);
  EXPECT_FALSE(held());
  EXPECT_EQ(got.guard->release(), nullptr) << "a second release has nothing to report";
}

TEST_F(ReleaseOutcome, AFailedReleaseIsReportedAsTheStoresErrorAndTheLeaseStaysHeld) {
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
  EXPECT_TRUE(held()) << "the store never heard the release: the lease runs out at its ttl";
  EXPECT_EQ(got.guard->release(), nullptr) << "the lease already ended here";
}

TEST_F(ReleaseOutcome, AbandoningLeavesTheLeaseOnTheStoreAndAReleaseAfterItReportsNothing) {
  ASSERT_TRUE(got);
  got.guard->abandon();
  EXPECT_TRUE(held());
  EXPECT_EQ(got.guard->release(), nullptr);
}

}  // namespace
}  // namespace leader
