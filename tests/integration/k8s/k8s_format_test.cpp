// The Lease objects this store writes, read back raw from the double: the fields and formats of
// client-go's LeaseLock (reference notes section 4), leaseTransitions, release, and the fencing
// annotation.

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <thread>

#include "child_process.hpp"
#include "k8s_double.hpp"
#include "leader/leader.hpp"
#include "timing.hpp"

namespace leader::k8s::test {
namespace {

using Ms = std::chrono::milliseconds;

LeaseRequest request(const std::string& lock, const std::string& node, Ms ttl, int slots = 0) {
  return {lock, new_owner_token(), node, ttl, slots};
}

nlohmann::json raw(K8sStore& s, const std::string& name) {
  auto r = s.api().get(name, soon());
  EXPECT_EQ(r.status, 200) << r.body.dump();
  return r.body;
}

class K8sFormat : public ::testing::Test {
 protected:
  Double server_;
};

TEST_F(K8sFormat, AGrantWritesTheFieldsOfClientGosLeaseLock) {
  auto s = server_.store("fmt");
  auto got = s->try_acquire(request("nightly-settlement", "host-a:1", Ms{15000}), soon());
  ASSERT_TRUE(got);
  auto obj = raw(*s, "nightly-settlement");
  EXPECT_EQ(obj["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(obj["kind"], "Lease");
  const auto& spec = obj["spec"];
  EXPECT_EQ(spec["holderIdentity"], "host-a:1_" + got.lease->owner);
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);  // client-go: 0 on create
  const std::regex micro(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)");
  EXPECT_TRUE(std::regex_match(spec["acquireTime"].get<std::string>(), micro)) << spec;
  EXPECT_TRUE(std::regex_match(spec["renewTime"].get<std::string>(), micro)) << spec;
  const auto& ann = obj["metadata"]["annotations"];
  EXPECT_EQ(ann[kFenceAnnotation], std::to_string(got.lease->fencing_token));
  EXPECT_EQ(ann[kLockAnnotation], "nightly-settlement");
  EXPECT_EQ(obj["metadata"]["labels"][kLockLabel], short_hash("nightly-settlement"));
  EXPECT_FALSE(spec.contains("strategy"));
}

TEST_F(K8sFormat, ReleaseWritesAnEmptyHolderAndTheNextHolderCountsATransition) {
  auto s = server_.store("fmt");
  auto first = s->try_acquire(request("job-b", "a", Ms{5000}), soon());
  ASSERT_TRUE(first);
  EXPECT_EQ(s->release(*first.lease, Ms{0}, soon()), LeaseStatus::ok);
  auto obj = raw(*s, "job-b");
  EXPECT_EQ(obj["spec"]["holderIdentity"], "");  // a pointer to "", still written
  EXPECT_EQ(obj["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ(obj["spec"]["leaseTransitions"], 0);
  // An empty holder is free at once, whatever the times (client-go's rule), for a new client too.
  auto second = server_.store("fmt")->try_acquire(request("job-b", "b", Ms{5000}), soon());
  ASSERT_TRUE(second);
  EXPECT_GT(second.lease->fencing_token, first.lease->fencing_token);
  EXPECT_EQ(raw(*s, "job-b")["spec"]["leaseTransitions"], 1);
}

TEST_F(K8sFormat, RenewTimeIsTheWritersWallClockWhateverTheRenewalRate) {
  // Judged by a second client reading the Lease from the API, as kubectl users and other tools
  // do: renewTime + leaseDurationSeconds must not keep a dead holder looking live, so renewTime
  // is the time of the write (never ahead of the wall clock), however often the holder renews.
  auto s = server_.store("fmt");
  auto reader = server_.store("fmt");
  auto got = s->try_acquire(request("job-c", "a", Ms{2000}), soon());
  ASSERT_TRUE(got);
  const auto start = std::chrono::system_clock::now();
  int renewals = 0;
  Duration most_ahead{-std::chrono::hours(1)};
  Duration most_behind{0};
  while (std::chrono::system_clock::now() - start < std::chrono::seconds(3)) {
    Lease l = *got.lease;
    ASSERT_EQ(status_of(s->renew(l, Ms{2000}, soon())), LeaseStatus::ok);
    ++renewals;
    const auto written = std::chrono::system_clock::now();
    const auto r = reader->api().get("job-c", soon());
    ASSERT_EQ(r.status, 200) << r.body.dump();
    const auto read = std::chrono::system_clock::now();
    const auto renew_time = parse_micro_time(r.body["spec"]["renewTime"].get<std::string>());
    ASSERT_TRUE(renew_time) << r.body["spec"].dump();
    most_ahead = std::max(most_ahead, std::chrono::duration_cast<Duration>(*renew_time - read));
    most_behind =
        std::max(most_behind, std::chrono::duration_cast<Duration>(written - *renew_time));
    std::this_thread::sleep_for(Ms{150});
  }
  std::printf(
      "renewals %d: renewTime at most %lld ms ahead of a reader's clock, at most %lld ms "
      "behind the write\n",
      renewals, static_cast<long long>(most_ahead.count()),
      static_cast<long long>(most_behind.count()));
  EXPECT_GE(renewals, 5);
  EXPECT_LE(most_ahead.count(), 0)
      << "renewTime ran " << most_ahead.count() << " ms ahead of the wall clock after " << renewals
      << " renewals";
  EXPECT_LT(most_behind, std::chrono::seconds(1))
      << "renewTime lagged the write by " << most_behind.count() << " ms";
}

TEST_F(K8sFormat, ANonDnsLockNameIsEncodedAndItsExactNameKeptInAnAnnotation) {
  auto s = server_.store("fmt");
  const std::string lock = "tenant:Acme:Nightly_Job";
  auto got = s->try_acquire(request(lock, "a", Ms{5000}), soon());
  ASSERT_TRUE(got);
  auto obj = raw(*s, object_name(lock));
  EXPECT_EQ(obj["metadata"]["annotations"][kLockAnnotation], lock);
  auto state = s->inspect(lock, soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_EQ(state.holders[0].owner, got.lease->owner);
  EXPECT_EQ(state.holders[0].node_id, "a");
}

TEST_F(K8sFormat, AnObjectOfAnotherLockUnderTheSameNameIsRefused) {
  auto s = server_.store("fmt");
  // A single lock named like slot 0 of group "grp": the annotation tells them apart.
  auto group = s->try_acquire(request("grp", "a", Ms{5000}, 2), soon());
  ASSERT_TRUE(group);
  try {
    (void)s->try_acquire(request("grp-slot0", "b", Ms{5000}), soon());
    ADD_FAILURE() << "a lock shared another lock's object";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
  }
}

TEST_F(K8sFormat, GroupSlotsAreSeparateLeasesNamedSlotK) {
  auto s = server_.store("fmt");
  auto a = s->try_acquire(request("workers", "a", Ms{5000}, 2), soon());
  auto b = s->try_acquire(request("workers", "b", Ms{5000}, 2), soon());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a.lease->slot, 0);
  EXPECT_EQ(b.lease->slot, 1);
  EXPECT_GT(b.lease->fencing_token, a.lease->fencing_token);
  auto slot1 = raw(*s, "workers-slot1");
  EXPECT_EQ(slot1["metadata"]["annotations"][kSlotsAnnotation], "2");
  EXPECT_EQ(slot1["metadata"]["annotations"][kSlotAnnotation], "1");
  EXPECT_EQ(slot1["spec"]["holderIdentity"], "b_" + b.lease->owner);
}

TEST_F(K8sFormat, TheGrantedTtlIsTheWholeSecondsWrittenRoundedDown) {
  // Contenders wait exactly leaseDurationSeconds: the holder is told that, never more (issue 13).
  auto s = server_.store("fmt");
  auto got = s->try_acquire(request("whole", "a", Ms{1999}), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(got.lease->ttl, Ms{1000});
  EXPECT_EQ(raw(*s, "whole")["spec"]["leaseDurationSeconds"], 1);
  const Renewal r = s->renew(*got.lease, Ms{2500}, soon());
  ASSERT_EQ(r.status, LeaseStatus::ok);
  EXPECT_EQ(r.ttl, Ms{2000});
  EXPECT_EQ(raw(*s, "whole")["spec"]["leaseDurationSeconds"], 2);
  auto state = s->inspect("whole", soon());
  ASSERT_EQ(state.holders.size(), 1u);
  EXPECT_LE(state.holders[0].expires_in, r.ttl) << "the observer holds it longer than granted";
  auto group = s->try_acquire(request("whole-group", "a", Ms{3700}, 2), soon());
  ASSERT_TRUE(group);
  EXPECT_EQ(group.lease->ttl, Ms{3000});
  EXPECT_EQ(raw(*s, "whole-group-slot0")["spec"]["leaseDurationSeconds"], 3);
}

TEST_F(K8sFormat, ATtlUnderOneSecondIsRefusedBeforeAnyWrite) {
  auto s = server_.store("fmt");
  const auto refused = [](auto&& call) {
    try {
      call();
    } catch (const BackendError& e) {
      EXPECT_NE(std::string(e.what()).find("under one second"), std::string::npos) << e.what();
      return e.code() == ErrorCode::invalid_argument;
    }
    return false;
  };
  EXPECT_TRUE(refused([&] { (void)s->try_acquire(request("short", "a", Ms{999}), soon()); }));
  EXPECT_EQ(s->api().get("short", soon()).status, 404) << "the refused grant wrote an object";
  auto got = s->try_acquire(request("short", "a", Ms{1000}), soon());
  ASSERT_TRUE(got);
  const std::string version = raw(*s, "short")["metadata"]["resourceVersion"];
  EXPECT_TRUE(refused([&] { (void)s->renew(*got.lease, Ms{500}, soon()); }));
  EXPECT_EQ(raw(*s, "short")["metadata"]["resourceVersion"], version);
}

TEST_F(K8sFormat, AGroupAfterAnExpiredSingleLeaseFreesItInTheTokenDraw) {
  auto s = server_.store("fmt");
  auto single = s->try_acquire(request("reshape", "a", Ms{1000}), soon());
  ASSERT_TRUE(single);
  // Expired by this process's count (the observer's steady clock, README "Safety").
  ASSERT_TRUE(
      ::leader::test::eventually([&] { return !s->inspect("reshape", soon()).held(); }, Ms{5000}));
  auto group = s->try_acquire(request("reshape", "b", Ms{5000}, 2), soon());
  ASSERT_TRUE(group) << "the expired single lease blocked the group";
  EXPECT_GT(group.lease->fencing_token, single.lease->fencing_token);
  auto base = raw(*s, "reshape");
  EXPECT_EQ(base["spec"]["holderIdentity"], "") << "the token draw kept the expired holder";
  EXPECT_EQ(base["metadata"]["annotations"][kFenceAnnotation],
            std::to_string(group.lease->fencing_token));
  EXPECT_EQ(s->renew(*single.lease, Ms{1000}, soon()).status, LeaseStatus::lost);
}

/// The Lease `name` as Debian's python3-kubernetes (the official client, typed models generated
/// from the OpenAPI spec) deserializes it, as JSON; nullopt when that package is missing.
std::optional<nlohmann::json> read_with_python_client(int port, const std::string& ns,
                                                      const std::string& name) {
  const std::string script = LEADER_SOURCE_DIR "/tests/doubles/k8s/selftest.py";
  ::leader::test::ChildProcess reader(
      {"/usr/bin/python3", script, "--read", std::to_string(port), ns, name});
  const std::string out = reader.read_all(std::chrono::seconds(30));
  if (reader.wait() != 0) return std::nullopt;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

TEST_F(K8sFormat, TheOfficialPythonClientReadsOurLeaseIntoItsTypedModel) {
  auto s = server_.store("fmt");
  auto got = s->try_acquire(request("typed", "host-b:2", Ms{4000}), soon());
  ASSERT_TRUE(got);
  auto seen = read_with_python_client(server_.port(), "fmt", "typed");
  if (!seen) GTEST_SKIP() << "python3-kubernetes is not installed (scripts/install-deps.sh)";
  EXPECT_EQ((*seen)["holderIdentity"], "host-b:2_" + got.lease->owner);
  EXPECT_EQ((*seen)["leaseDurationSeconds"], 4);
  EXPECT_EQ((*seen)["leaseTransitions"], 0);
  EXPECT_EQ((*seen)["renewTzUtc"], true);
  EXPECT_EQ((*seen)["annotations"][kFenceAnnotation], std::to_string(got.lease->fencing_token));
}

}  // namespace
}  // namespace leader::k8s::test
