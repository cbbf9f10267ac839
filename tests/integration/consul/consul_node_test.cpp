// Sessions that Consul invalidates before their TTL (issue 37, defect 4): a node deregistered
// (a graceful agent leave) invalidates every session of that node at once. Judged by a second
// client on another node: it must not be granted the lock before the holder's local deadline
// has passed and its stop_token fired.

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <latch>
#include <optional>
#include <thread>

#include "consul_double.hpp"

namespace leader::consul::test {
namespace {

using Clock = std::chrono::steady_clock;

long long ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

/// The holder (node consul-double) acquires without renewing; its node is deregistered at once;
/// a contender on node-b tries every 10 ms. Returns nothing; records into the test's expectations.
void deregistration_case(const std::string& extra, const std::string& target,
                         const std::string& body) {
  DoubleServer d({"--ttl-multiplier", "1", "--agent", "node-b"});
  ElectionOptions o;
  o.lease_time = Ms{2000};
  o.wait_time = Duration{0};
  o.node_id = "holder";
  LeaderElector holder(d.store(extra), o);
  auto contender = d.store_on("node-b", extra);

  std::latch acquired(1);
  std::atomic<bool> done{false};
  std::optional<Clock::time_point> stop_at;
  Clock::time_point deadline{};
  std::mutex mu;
  std::thread run([&] {
    const bool ran = holder.run_if_leader("dereg", [&](LeaderContext& ctx) {
      {
        std::lock_guard lock(mu);
        deadline = ctx.deadline();
      }
      std::stop_callback on_stop(ctx.stop_token(), [&] {
        std::lock_guard lock(mu);
        if (!stop_at) stop_at = Clock::now();
      });
      acquired.count_down();
      while (!ctx.stop_token().stop_requested() && !done) std::this_thread::sleep_for(Ms{5});
    });
    if (!ran) acquired.count_down();
  });
  acquired.wait();
  const auto deregistered = Clock::now();
  ASSERT_EQ(d.put(target, body), 200);

  std::optional<Clock::time_point> granted_sent;  // the contender's winning request was sent
  while (!granted_sent && Clock::now() - deregistered < Ms{8000}) {
    const auto sent = Clock::now();
    if (contender->try_acquire(single("dereg", Ms{2000}), soon()))
      granted_sent = sent;
    else
      std::this_thread::sleep_for(Ms{10});
  }
  // The holder runs on until its stop_token fires (at its local deadline, it does not renew).
  for (int i = 0; i < 600; ++i) {
    {
      std::lock_guard lock(mu);
      if (stop_at) break;
    }
    std::this_thread::sleep_for(Ms{10});
  }
  done = true;
  run.join();
  std::lock_guard lock(mu);
  ASSERT_TRUE(granted_sent) << "the contender was never granted the lock (liveness)";
  ASSERT_NE(deadline, Clock::time_point{}) << "the holder never ran";
  ASSERT_TRUE(stop_at) << "the holder's stop_token never fired";
  ::testing::Test::RecordProperty("granted_after_deregistration_ms",
                                  std::to_string(ms_between(deregistered, *granted_sent)));
  std::printf(
      "contender granted %lld ms after the deregistration, %lld ms after the holder's "
      "local deadline, %lld ms after its stop_token fired\n",
      ms_between(deregistered, *granted_sent), ms_between(deadline, *granted_sent),
      ms_between(*stop_at, *granted_sent));
  EXPECT_GT(*granted_sent, deadline)
      << "a contender on another node was granted " << ms_between(*granted_sent, deadline)
      << " ms before the holder's local deadline (" << ms_between(deregistered, *granted_sent)
      << " ms after the deregistration)";
  EXPECT_LT(*stop_at, *granted_sent)
      << "the holder's stop_token fired " << ms_between(*granted_sent, *stop_at)
      << " ms after the contender's grant";
}

TEST(ConsulNodes, ADeregisteredNodeLetsNoOtherNodeInBeforeTheHoldersDeadline) {
  deregistration_case("", "/v1/catalog/deregister",
                      std::string(R"({"Node":")") + DoubleServer::kNode + R"("})");
}

TEST(ConsulNodes, AnAgentLeaveLetsNoOtherNodeInBeforeTheHoldersDeadline) {
  deregistration_case("", "/v1/agent/leave", "");
}

TEST(ConsulNodes, ACriticalSerfHealthDoesNotEndTheStoresSessions) {
  DoubleServer d({"--ttl-multiplier", "1"});
  auto s = d.store();
  auto held = s->try_acquire(single("serf", Ms{5000}), soon());
  ASSERT_TRUE(held);
  ASSERT_EQ(d.put("/v1/catalog/register",
                  std::string(R"({"Node":")") + DoubleServer::kNode +
                      R"(","Check":{"CheckID":"serfHealth","Status":"critical"}})"),
            200);
  Lease copy = *held.lease;
  EXPECT_EQ(status_of(s->renew(copy, Ms{5000}, soon())), LeaseStatus::ok)
      << "a failing serfHealth invalidated the lease's session";
}

// Issue 37 defect 9, the Consul side: a key this process no longer claims (its release never
// reached the server) must be freed within its session's TTL (+ lock-delay) while the same store
// keeps renewing other leases and trying the same lock again. Each lease has a session of its
// own that only renew(lease) renews, so nothing else keeps the key's session alive. Judged by a
// second client.
TEST(ConsulSessions, AKeyWhoseReleaseWasLostIsFreedWhileTheProcessKeepsRenewingOthers) {
  DoubleServer d({"--ttl-multiplier", "1"});
  auto s = d.store();
  auto judge = d.store();
  auto kept = s->try_acquire(single("kept", Ms{1000}), soon());  // its release is "lost"
  auto other = s->try_acquire(single("other", Ms{1000}), soon());
  ASSERT_TRUE(kept && other);
  const auto start = Clock::now();
  std::optional<Clock::time_point> freed;
  int renewals = 0;
  while (!freed && Clock::now() - start < Ms{8000}) {
    Lease copy = *other.lease;
    ASSERT_EQ(status_of(s->renew(copy, Ms{1000}, soon())), LeaseStatus::ok);
    ++renewals;
    if (auto g = judge->try_acquire(single("kept", Ms{1000}), soon())) {
      freed = Clock::now();
      EXPECT_GT(g.lease->fencing_token, kept.lease->fencing_token);
    } else if (auto mine = s->try_acquire(single("kept", Ms{1000}), soon())) {
      freed = Clock::now();  // the process's next term got it: off the lost lease's session too
      EXPECT_GT(mine.lease->fencing_token, kept.lease->fencing_token);
    }
    std::this_thread::sleep_for(Ms{100});
  }
  ASSERT_TRUE(freed) << "the unreleased key was still held after 8 s while the process renewed "
                     << renewals << " times";
  ::testing::Test::RecordProperty("freed_after_ms", std::to_string(ms_between(start, *freed)));
  std::printf("the unreleased key was freed after %lld ms (%d renewals of another lease)\n",
              ms_between(start, *freed), renewals);
  // TTL 1 s (multiplier 1) + lock-delay 1 s (auto: the TTL) + polling and load slack.
  EXPECT_LT(Clock::now() - start, Ms{5000});
}

}  // namespace
}  // namespace leader::consul::test
