// The CheckedStore (src/core/engine/checked_store.hpp): every rule it enforces, with the error type
// and the message naming the problem; a wrapped fake store proves that nothing reaches the store on
// invalid input or a passed deadline; stray exceptions become BackendError{internal}.

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "leader/detail/store_support.hpp"
#include "leader/leader.hpp"
#include "leader/lock_listing.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

const std::string kOwner = "0123456789abcdef0123456789abcdef";

// Counts the calls that reach it; `fail` (when set) runs first in every call.
class FakeStore final : public LeaseStore {
 public:
  std::string_view scheme() const override { return "fake"; }
  Acquired try_acquire(const LeaseRequest& r, Deadline) override {
    hit();
    return {Lease{r.lock, r.owner, r.node_id, 7, 0, r.slots, r.ttl, grant_sent_at}};
  }
  Renewal renew(const Lease&, Duration ttl, Deadline) override {
    hit();
    return {LeaseStatus::ok, ttl};
  }
  LeaseStatus release(const Lease&, Duration keep_for, Deadline) override {
    hit();
    last_keep_for = keep_for;
    return LeaseStatus::ok;
  }
  LockState inspect(std::string_view lock, Deadline) override {
    hit();
    return {std::string(lock), {}};
  }
  void put_candidate(std::string_view, const Candidate&, Duration, Deadline) override { hit(); }
  std::vector<Candidate> list_candidates(std::string_view, Deadline) override {
    hit();
    return {};
  }
  void remove_candidate(std::string_view, std::string_view, Deadline) override { hit(); }

  int calls = 0;
  std::function<void()> fail;
  TimePoint grant_sent_at{};
  Duration last_keep_for{-1};

 private:
  void hit() {
    ++calls;
    if (fail) fail();
  }
};

struct Wrapped {
  std::shared_ptr<FakeStore> fake = std::make_shared<FakeStore>();
  std::shared_ptr<LeaseStore> store = detail::checked(fake);
};

Deadline soon() { return Deadline::after(5s); }

LeaseRequest good_request() { return {"job", kOwner, "host:1", 10s, 0}; }
Lease good_lease() { return Lease{"job", kOwner, "host:1", 7, 0, 0, 10s, {}}; }
Candidate good_candidate() { return Candidate{.node_id = "host:1", .metadata = {{"zone", "a"}}}; }

// Expects InvalidArgument whose message contains every part of `parts`, and no store call.
void expect_refused(Wrapped& w, const std::function<void(LeaseStore&)>& call,
                    const std::vector<std::string>& parts) {
  try {
    call(*w.store);
    ADD_FAILURE() << "accepted; expected InvalidArgument naming " << parts.front();
  } catch (const InvalidArgument& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  EXPECT_EQ(w.fake->calls, 0) << "the store was called";
}

struct RequestCase {
  const char* name;
  std::function<void(LeaseRequest&)> edit;
  std::vector<std::string> message;
};

class BadRequest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(BadRequest, IsInvalidArgumentNamingTheProblemAndNeverReachesTheStore) {
  Wrapped w;
  LeaseRequest r = good_request();
  GetParam().edit(r);
  expect_refused(
      w, [&](LeaseStore& s) { (void)s.try_acquire(r, soon()); }, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    CheckedStore, BadRequest,
    ::testing::Values(
        RequestCase{"EmptyLock", [](LeaseRequest& r) { r.lock = ""; }, {"must not be empty"}},
        RequestCase{"LockWithSpace", [](LeaseRequest& r) { r.lock = "a b"; }, {"position 1"}},
        RequestCase{"LockTooLong",
                    [](LeaseRequest& r) { r.lock = std::string(256, 'a'); },
                    {"256 characters"}},
        RequestCase{"EmptyOwner",
                    [](LeaseRequest& r) { r.owner = ""; },
                    {"try_acquire of lock 'job'", "owner token ''", "32 lower-case hex"}},
        RequestCase{"UpperCaseOwner",
                    [](LeaseRequest& r) { r.owner = "0123456789ABCDEF0123456789ABCDEF"; },
                    {"owner token", "32 lower-case hex"}},
        RequestCase{"ShortOwner",
                    [](LeaseRequest& r) { r.owner.pop_back(); },
                    {"owner token", "32 lower-case hex"}},
        RequestCase{"OwnerWithSlash",
                    [](LeaseRequest& r) { r.owner[3] = '/'; },
                    {"owner token", "32 lower-case hex"}},
        RequestCase{
            "EmptyNodeId", [](LeaseRequest& r) { r.node_id = ""; }, {"node id ''", "1..255"}},
        RequestCase{"NodeIdTooLong",
                    [](LeaseRequest& r) { r.node_id = std::string(256, 'n'); },
                    {"node id", "256 characters", "1..255"}},
        RequestCase{"NodeIdWithNewline",
                    [](LeaseRequest& r) { r.node_id = "host\n1"; },
                    {"node id 'host\\x0a1'", "control character at position 4"}},
        RequestCase{"ZeroTtl", [](LeaseRequest& r) { r.ttl = 0ms; }, {"lease ttl is 0 ms", "> 0"}},
        RequestCase{
            "NegativeTtl", [](LeaseRequest& r) { r.ttl = -5ms; }, {"lease ttl is -5 ms", "> 0"}},
        RequestCase{"TtlAboveAYear",
                    [](LeaseRequest& r) { r.ttl = kMaxDuration + 1ms; },
                    {"lease ttl", "365 days"}},
        RequestCase{
            "NegativeSlots", [](LeaseRequest& r) { r.slots = -1; }, {"slots = -1", "0..1000"}},
        RequestCase{"TooManySlots",
                    [](LeaseRequest& r) { r.slots = detail::kMaxSlots + 1; },
                    {"slots = 1001", "0..1000"}}),
    [](const auto& info) { return std::string(info.param.name); });

struct LeaseCase {
  const char* name;
  std::function<void(LeaseStore&, Lease&)> call;
  std::vector<std::string> message;
};

class BadLease : public ::testing::TestWithParam<LeaseCase> {};

TEST_P(BadLease, IsInvalidArgumentNamingTheProblemAndNeverReachesTheStore) {
  Wrapped w;
  Lease lease = good_lease();
  expect_refused(
      w, [&](LeaseStore& s) { GetParam().call(s, lease); }, GetParam().message);
}

void renew(LeaseStore& s, const Lease& l, Duration ttl = 10s) { (void)s.renew(l, ttl, soon()); }
void release(LeaseStore& s, const Lease& l, Duration keep = 0ms) {
  (void)s.release(l, keep, soon());
}

INSTANTIATE_TEST_SUITE_P(
    CheckedStore, BadLease,
    ::testing::Values(LeaseCase{"RenewBadLock",
                                [](LeaseStore& s, Lease& l) {
                                  l.lock = "-x";
                                  renew(s, l);
                                },
                                {"must start with a letter or digit"}},
                      LeaseCase{"RenewBadOwner",
                                [](LeaseStore& s, Lease& l) {
                                  l.owner = "me";
                                  renew(s, l);
                                },
                                {"renew of lock 'job'", "owner token 'me'"}},
                      LeaseCase{"RenewZeroTtl",
                                [](LeaseStore& s, Lease& l) { renew(s, l, 0ms); },
                                {"renew of lock 'job'", "lease ttl is 0 ms"}},
                      LeaseCase{"RenewTtlAboveAYear",
                                [](LeaseStore& s, Lease& l) { renew(s, l, kMaxDuration + 1ms); },
                                {"lease ttl", "365 days"}},
                      LeaseCase{"RenewSlotOfASingleLease",
                                [](LeaseStore& s, Lease& l) {
                                  l.slot = 1;
                                  renew(s, l);
                                },
                                {"slot 1 is outside 0..0", "slots = 0"}},
                      LeaseCase{"RenewSlotBeyondTheGroup",
                                [](LeaseStore& s, Lease& l) {
                                  l.slots = 3;
                                  l.slot = 3;
                                  renew(s, l);
                                },
                                {"slot 3 is outside 0..2"}},
                      LeaseCase{"ReleaseNegativeSlot",
                                [](LeaseStore& s, Lease& l) {
                                  l.slots = 3;
                                  l.slot = -1;
                                  release(s, l);
                                },
                                {"release of lock 'job'", "slot -1 is outside 0..2"}},
                      LeaseCase{"ReleaseTooManySlots",
                                [](LeaseStore& s, Lease& l) {
                                  l.slots = 5000;
                                  release(s, l);
                                },
                                {"slots = 5000", "0..1000"}},
                      LeaseCase{"ReleaseNegativeKeepFor",
                                [](LeaseStore& s, Lease& l) { release(s, l, -1ms); },
                                {"release of lock 'job'", "keep_for is -1 ms", ">= 0"}},
                      LeaseCase{"ReleaseKeepForAboveAYear",
                                [](LeaseStore& s, Lease& l) { release(s, l, kMaxDuration + 1ms); },
                                {"keep_for", "365 days"}},
                      LeaseCase{"InspectBadLock",
                                [](LeaseStore& s, Lease&) { (void)s.inspect("a/b", soon()); },
                                {"'a/b'", "position 1"}}),
    [](const auto& info) { return std::string(info.param.name); });

struct CandidateCase {
  const char* name;
  std::function<void(LeaseStore&, Candidate&)> call;
  std::vector<std::string> message;
};

class BadCandidate : public ::testing::TestWithParam<CandidateCase> {};

TEST_P(BadCandidate, IsInvalidArgumentNamingTheProblemAndNeverReachesTheStore) {
  Wrapped w;
  Candidate c = good_candidate();
  expect_refused(
      w, [&](LeaseStore& s) { GetParam().call(s, c); }, GetParam().message);
}

void put(LeaseStore& s, const Candidate& c, Duration ttl = 30s, std::string_view group = "g") {
  s.put_candidate(group, c, ttl, soon());
}

INSTANTIATE_TEST_SUITE_P(
    CheckedStore, BadCandidate,
    ::testing::Values(
        CandidateCase{"PutBadGroup",
                      [](LeaseStore& s, Candidate& c) { put(s, c, 30s, "g{1}"); },
                      {"'{'", "position 1"}},
        CandidateCase{"PutEmptyNodeId",
                      [](LeaseStore& s, Candidate& c) {
                        c.node_id = "";
                        put(s, c);
                      },
                      {"put_candidate of candidate group 'g'", "node id ''", "1..255"}},
        CandidateCase{"PutZeroTtl",
                      [](LeaseStore& s, Candidate& c) { put(s, c, 0ms); },
                      {"candidate ttl is 0 ms", "> 0"}},
        CandidateCase{"PutTtlAboveAYear",
                      [](LeaseStore& s, Candidate& c) { put(s, c, kMaxDuration + 1ms); },
                      {"candidate ttl", "365 days"}},
        CandidateCase{"PutTooManyMetadataEntries",
                      [](LeaseStore& s, Candidate& c) {
                        for (int i = 0; i < 65; ++i) c.metadata["k" + std::to_string(i)] = "v";
                        put(s, c);
                      },
                      {"metadata entries; the limit is 64"}},
        CandidateCase{"PutEmptyMetadataKey",
                      [](LeaseStore& s, Candidate& c) {
                        c.metadata[""] = "v";
                        put(s, c);
                      },
                      {"metadata key ''", "1..255"}},
        CandidateCase{"PutMetadataValueTooLong",
                      [](LeaseStore& s, Candidate& c) {
                        c.metadata["zone"] = std::string(4097, 'v');
                        put(s, c);
                      },
                      {"metadata value of key 'zone'", "4097", "4096"}},
        CandidateCase{"PutCounterAboveInt64",
                      [](LeaseStore& s, Candidate& c) {
                        c.failures = ~std::uint64_t{0};
                        put(s, c);
                      },
                      {"success or failure count", "signed 64-bit"}},
        CandidateCase{"ListBadGroup",
                      [](LeaseStore& s, Candidate&) { (void)s.list_candidates("", soon()); },
                      {"must not be empty"}},
        CandidateCase{"RemoveBadGroup",
                      [](LeaseStore& s, Candidate&) { s.remove_candidate(" g", "n", soon()); },
                      {"must start with a letter or digit"}},
        CandidateCase{"RemoveEmptyNodeId",
                      [](LeaseStore& s, Candidate&) { s.remove_candidate("g", "", soon()); },
                      {"remove_candidate of candidate group 'g'", "node id ''"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CheckedStore, ValidCallsReachTheStoreOnceWithTheirValues) {
  Wrapped w;
  EXPECT_TRUE(w.store->try_acquire(good_request(), soon()));
  LeaseRequest group = good_request();
  group.slots = detail::kMaxSlots;
  EXPECT_TRUE(w.store->try_acquire(group, soon()));
  Lease slot2 = good_lease();
  slot2.slots = 3;
  slot2.slot = 2;
  EXPECT_EQ(w.store->renew(slot2, 10s, soon()).status, LeaseStatus::ok);
  EXPECT_EQ(w.store->release(good_lease(), 0ms, soon()), LeaseStatus::ok);
  EXPECT_EQ(w.fake->last_keep_for, 0ms);
  EXPECT_EQ(w.store->release(good_lease(), kMaxDuration, soon()), LeaseStatus::ok);
  EXPECT_EQ(w.fake->last_keep_for, kMaxDuration);
  EXPECT_EQ(w.store->inspect("job", soon()).lock, "job");
  Candidate c = good_candidate();
  c.node_id = std::string(detail::kMaxNodeIdLength, 'n');
  c.metadata = {{std::string(detail::kMaxMetadataKeyLength, 'k'),
                 std::string(detail::kMaxMetadataValueLength, 'v')}};
  w.store->put_candidate("g", c, 30s, soon());
  EXPECT_TRUE(w.store->list_candidates("g", soon()).empty());
  w.store->remove_candidate("g", "host:1", soon());
  EXPECT_EQ(w.fake->calls, 9);
}

TEST(CheckedStore, APassedDeadlineIsDeadlineExceededBeforeAnyCall) {
  Wrapped w;
  const Deadline passed = Deadline::after(-1ms);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"try_acquire of lock 'job'", [&] { (void)w.store->try_acquire(good_request(), passed); }},
      {"renew of lock 'job'", [&] { (void)w.store->renew(good_lease(), 1s, passed); }},
      {"release of lock 'job'", [&] { (void)w.store->release(good_lease(), 0ms, passed); }},
      {"inspect of lock 'job'", [&] { (void)w.store->inspect("job", passed); }},
      {"put_candidate of candidate group 'g'",
       [&] { w.store->put_candidate("g", good_candidate(), 1s, passed); }},
      {"list_candidates of candidate group 'g'",
       [&] { (void)w.store->list_candidates("g", passed); }},
      {"remove_candidate of candidate group 'g'",
       [&] { w.store->remove_candidate("g", "n", passed); }},
  };
  for (const auto& [what, call] : calls) {
    try {
      call();
      ADD_FAILURE() << what << ": accepted a passed deadline";
    } catch (const BackendError& e) {
      EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
      EXPECT_EQ(e.store(), "fake");
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("nothing was sent"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(w.fake->calls, 0);
}

TEST(CheckedStore, AStrayExceptionIsInternalNamingTheStoreAndTheCall) {
  Wrapped w;
  w.fake->fail = [] { throw std::out_of_range("map::at"); };
  try {
    (void)w.store->renew(good_lease(), 1s, soon());
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::internal);
    EXPECT_EQ(e.store(), "fake");
    const std::string m = e.what();
    EXPECT_NE(m.find("fake store"), std::string::npos) << m;
    EXPECT_NE(m.find("renew of lock 'job'"), std::string::npos) << m;
    EXPECT_NE(m.find("map::at"), std::string::npos) << m;
  }
  EXPECT_THROW(w.store->remove_candidate("g", "n", soon()), BackendError);
  EXPECT_THROW((void)w.store->list_candidates("g", soon()), BackendError);
}

TEST(CheckedStore, LeaderErrorsFromTheStorePassUnchanged) {
  Wrapped w;
  w.fake->fail = [] { throw BackendError(ErrorCode::unavailable, "fake", "connection refused"); };
  try {
    (void)w.store->try_acquire(good_request(), soon());
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::unavailable);
    EXPECT_EQ(std::string(e.what()), "fake store: unavailable: connection refused");
  }
  w.fake->fail = [] { throw InvalidArgument("the backend's own key limit"); };
  EXPECT_THROW((void)w.store->inspect("job", soon()), InvalidArgument);
}

TEST(CheckedStore, StampsTheSendTimeOfAGrantTheStoreLeftEmpty) {
  Wrapped w;
  const TimePoint before = std::chrono::steady_clock::now();
  Acquired got = w.store->try_acquire(good_request(), soon());
  ASSERT_TRUE(got);
  EXPECT_GE(got.lease->sent_at, before);
  EXPECT_LE(got.lease->sent_at, std::chrono::steady_clock::now());

  w.fake->grant_sent_at = TimePoint{} + 42s;  // the store's own, more precise stamp is kept
  got = w.store->try_acquire(good_request(), soon());
  ASSERT_TRUE(got);
  EXPECT_EQ(got.lease->sent_at, TimePoint{} + 42s);
}

TEST(CheckedStore, WrapsOnceAndUnwrapsForStoreSpecificCasts) {
  auto fake = std::make_shared<FakeStore>();
  auto once = detail::checked(fake);
  EXPECT_NE(once.get(), fake.get());
  EXPECT_EQ(detail::checked(once).get(), once.get());
  EXPECT_EQ(detail::checked(nullptr), nullptr);
  EXPECT_EQ(&detail::unchecked(*once), fake.get());
  EXPECT_EQ(&detail::unchecked(*fake), fake.get());
  EXPECT_EQ(once->scheme(), "fake");
}

TEST(CheckedStore, ListLocksReachesTheWrappedStoreAfterItsChecks) {
  auto store = make_memory_store();
  auto got = store->try_acquire(good_request(), soon());
  ASSERT_TRUE(got);
  auto all = list_locks(*store, "", soon());
  ASSERT_EQ(all.size(), 1U);
  EXPECT_EQ(all[0].lock, "job");
  EXPECT_EQ(list_locks(*store, "tenant:acme:", soon()).size(), 0U);  // a prefix may end in ':'
  EXPECT_THROW((void)list_locks(*store, "a b", soon()), InvalidArgument);
  EXPECT_THROW((void)list_locks(*store, std::string(256, 'a'), soon()), InvalidArgument);
  try {
    (void)list_locks(*store, "", Deadline::after(-1ms));
    ADD_FAILURE() << "accepted a passed deadline";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded) << e.what();
  }
  Wrapped w;  // a store that cannot list: failed_precondition naming it
  try {
    (void)list_locks(*w.store, "", soon());
    ADD_FAILURE() << "listed a store that is no LockLister";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition) << e.what();
    EXPECT_EQ(e.store(), "fake");
  }
}

TEST(CheckedStore, OpenAndMakeMemoryStoreReturnCheckedStores) {
  for (const auto& store : {leader::open("memory:"), make_memory_store()}) {
    EXPECT_NE(&detail::unchecked(*store), store.get());
    EXPECT_EQ(store->scheme(), "memory");
    EXPECT_THROW((void)store->inspect("", soon()), InvalidArgument);
    set_memory_store_unavailable(*store, true);  // reaches the memory store behind the wrapper
    EXPECT_THROW((void)store->inspect("job", soon()), BackendError);
    set_memory_store_unavailable(*store, false);
    EXPECT_FALSE(store->inspect("job", soon()).held());
  }
}

}  // namespace
}  // namespace leader
