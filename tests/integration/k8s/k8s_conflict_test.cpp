// Optimistic concurrency: a client-go-style foreign holder (raw writes as LeaseLock makes them),
// 409 Conflict handling on renew, and outcomes the double injects (lost replies, 503).

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "k8s_double.hpp"
#include "leader/leader.hpp"
#include "timing.hpp"

namespace leader::k8s::test {
namespace {

using Ms = std::chrono::milliseconds;
using leader::test::eventually;

LeaseRequest request(const std::string& lock, Ms ttl) {
  return {lock, new_owner_token(), "ours", ttl, 0};
}

/// A Lease as client-go's LeaseLock creates it for `identity` (no annotations, no labels).
nlohmann::json client_go_lease(const std::string& name, const std::string& identity, int secs) {
  const std::string now = micro_time(std::chrono::system_clock::now());
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"holderIdentity", identity},
            {"leaseDurationSeconds", secs},
            {"acquireTime", now},
            {"renewTime", now},
            {"leaseTransitions", 0}}}};
}

/// client-go's renew: PUT the remembered object with a new renewTime.
nlohmann::json client_go_renew(K8sStore& s, nlohmann::json obj) {
  obj["spec"]["renewTime"] = micro_time(std::chrono::system_clock::now());
  auto r = s.api().replace(obj["metadata"]["name"], obj, soon());
  EXPECT_EQ(r.status, 200) << r.body.dump();
  return r.body;
}

class K8sConflict : public ::testing::Test {
 protected:
  Double server_;
};

TEST_F(K8sConflict, AClientGoHolderKeepsUsOutWhileItRenewsAndIsTakenOverAfterItsDuration) {
  auto s = server_.store("cg");
  auto created = s->api().create(client_go_lease("operator", "go-pod-1", 2), soon());
  ASSERT_EQ(created.status, 201);
  nlohmann::json obj = created.body;
  // While it renews every 0.5 s (client-go's RetryPeriod, scaled), we never get in.
  const auto until = std::chrono::steady_clock::now() + Ms{3000};
  while (std::chrono::steady_clock::now() < until) {
    EXPECT_FALSE(s->try_acquire(request("operator", Ms{2000}), soon())) << "took a live lease";
    std::this_thread::sleep_for(Ms{250});
    obj = client_go_renew(*s, obj);
  }
  // It stops renewing: we get in once we have seen its last record for 2 s.
  const auto stopped = std::chrono::steady_clock::now();
  std::optional<Lease> got;
  ASSERT_TRUE(eventually(
      [&] {
        auto a = s->try_acquire(request("operator", Ms{2000}), soon());
        if (a) got = *a.lease;
        return a.lease.has_value();
      },
      Ms{5000}));
  EXPECT_GE(std::chrono::steady_clock::now() - stopped, Ms{1900});
  auto after = s->api().get("operator", soon()).body;
  EXPECT_EQ(after["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(after["spec"]["holderIdentity"], "ours_" + got->owner);
  // client-go's stale holder now fails its conditional update (409), as it would.
  obj["spec"]["renewTime"] = micro_time(std::chrono::system_clock::now());
  auto stale = s->api().replace("operator", obj, soon());
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.reason, "Conflict");
}

TEST_F(K8sConflict, ARenewAfterAnotherWriterChangedTheObjectFollowsThe409AndStaysOurs) {
  auto s = server_.store("cg");
  auto got = s->try_acquire(request("annotated", Ms{5000}), soon());
  ASSERT_TRUE(got);
  auto obj = s->api().get("annotated", soon()).body;  // `kubectl annotate` in between
  obj["metadata"]["annotations"]["team"] = "payments";
  ASSERT_EQ(s->api().replace("annotated", obj, soon()).status, 200);
  Lease l = *got.lease;
  EXPECT_EQ(status_of(s->renew(l, Ms{5000}, soon())), LeaseStatus::ok);
  auto after = s->api().get("annotated", soon()).body;
  EXPECT_EQ(after["metadata"]["annotations"]["team"], "payments");  // kept
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::ok);
  EXPECT_EQ(s->release(*got.lease, Ms{0}, soon()), LeaseStatus::lost);  // idempotent
}

TEST_F(K8sConflict, ARenewAfterAnotherHolderTookOverIsLostAndChangesNothing) {
  auto s = server_.store("cg");
  auto got = s->try_acquire(request("taken", Ms{5000}), soon());
  ASSERT_TRUE(got);
  auto obj = s->api().get("taken", soon()).body;
  obj["spec"]["holderIdentity"] = "go-pod-2";
  ASSERT_EQ(s->api().replace("taken", obj, soon()).status, 200);
  Lease l = *got.lease;
  EXPECT_EQ(status_of(s->renew(l, Ms{5000}, soon())), LeaseStatus::lost);
  EXPECT_EQ(s->api().get("taken", soon()).body["spec"]["holderIdentity"], "go-pod-2");
}

TEST_F(K8sConflict, AGrantWhoseReplyWasLostIsTheOwnersOnRetry) {
  auto s = server_.store("cg");
  auto req = request("lost-reply", Ms{5000});
  server_.faults(R"({"lose_next": 1})");
  // The create is applied and its reply lost. The transport reports an unknown outcome, or libcurl
  // resends the request on a new connection (its own rule for a reused connection closed before
  // any reply byte) and the resent create meets the applied one: contention. Never a grant.
  try {
    EXPECT_FALSE(s->try_acquire(req, soon())) << "a lost reply was reported as a grant";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  }
  auto again = s->try_acquire(req, soon());
  ASSERT_TRUE(again) << "the owner's retry contended with its own grant";
  EXPECT_EQ(again.lease->fencing_token, 1u);
  EXPECT_FALSE(server_.store("cg")->try_acquire(request("lost-reply", Ms{5000}), soon()));
}

TEST_F(K8sConflict, ServiceUnavailableIsUnavailableAndAppliesNothing) {
  auto s = server_.store("cg");
  server_.faults(R"({"fail_next": [503]})");
  try {
    (void)s->try_acquire(request("busy", Ms{5000}), soon());
    ADD_FAILURE() << "no error";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable) << e.what();
  }
  EXPECT_EQ(s->api().get("busy", soon()).status, 404);
  EXPECT_TRUE(s->try_acquire(request("busy", Ms{5000}), soon()));
}

}  // namespace
}  // namespace leader::k8s::test
