// On ZooKeeper: an ephemeral lock node whose release's outcome is
// unknown (its requests swallowed, then the connection lost) while the session survives would
// stay for as long as the session lives, kept alive by the process's other work (Curator's
// "guaranteed delete" problem). A userspace proxy in front of the test server swallows the
// release; the same store object then keeps renewing another lock and trying others. A second
// store object, straight on the server, judges when the lock is free again.

#include <gtest/gtest.h>

#include "fault_proxy.hpp"
#include "leader/leader.hpp"
#include "lost_release.hpp"
#include "zk_raw.hpp"
#include "zk_test_util.hpp"

namespace leader::zktest {
namespace {

using Clock = std::chrono::steady_clock;
using test::FaultProxy;

constexpr Ms kTtl{2000};  // = the session timeout (session_timeout=auto)
// The node is deleted by the store's orphan sweep once the session is connected again; the rest
// is room for a loaded machine.
constexpr Ms kSlack{2000};
constexpr Ms kGiveUp{10000};

LeaseRequest request(const std::string& lock) {
  return {lock, new_owner_token(), "lost-release-node", kTtl, 0};
}

std::size_t nodes(const std::string& lock) {
  RawClient raw;
  return raw.children("/leader/" + lock).size();
}

TEST(ZooKeeperLostRelease,
     AReleaseWhoseOutcomeIsUnknownFreesTheLockWithinTheTtlWhileTheHolderWorks) {
  const auto colon = hosts().rfind(':');
  FaultProxy proxy(hosts().substr(0, colon), std::stoi(hosts().substr(colon + 1)));
  auto holder = open("zk://" + proxy.endpoint() + "/?session_timeout=auto");
  auto judge = open(uri("session_timeout=auto"));
  const std::string lock = unique("lost-release");
  const std::string kept = unique("lost-release-kept");
  auto x = holder->try_acquire(request(lock), soon());
  auto y = holder->try_acquire(request(kept), soon());
  ASSERT_TRUE(x && y);
  const auto renew_sent = Clock::now();  // the last confirmed renewal of the lease released next
  ASSERT_EQ(holder->renew(*x.lease, kTtl, soon()).status, LeaseStatus::ok);
  proxy.set_mode(FaultProxy::Mode::blackhole);
  EXPECT_THROW((void)holder->release(*x.lease, Ms{0}, Deadline::after(Ms{300})), BackendError);
  ASSERT_GT(proxy.dropped_requests(), 0U);
  ASSERT_EQ(nodes(lock), 1U) << "the release reached the server after all";
  // The connection is lost; the client reconnects (through the proxy again) within the session.
  proxy.set_mode(FaultProxy::Mode::forward);
  proxy.cut_silenced();

  // The holder's process goes on, on the same session (it survived the lost connection).
  test::expect_freed_within_ttl({*holder, *judge, request, lock, kept, *y.lease, kTtl, kSlack,
                                 kGiveUp, unique("lost-release-other")},
                                renew_sent);
  (void)holder->release(*y.lease, Ms{0}, soon());
}

}  // namespace
}  // namespace leader::zktest
