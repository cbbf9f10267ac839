// leader::metrics: the series read back from the serialized text (memory store, fake clock,
// events published on a bus directly where an elector cannot produce them on demand).

#include "leader/metrics.hpp"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "leader/leader.hpp"
#include "leader/lock_listing.hpp"
#include "leader/stores/memory.hpp"

namespace leader::metrics {
namespace {

using namespace std::chrono_literals;

// The value of the sample `series` (name{labels} exactly as serialized), or -1 when absent.
double sample(const std::string& text, const std::string& series) {
  std::size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') return std::stod(text.substr(pos + series.size() + 1));
    pos += series.size();
  }
  return -1;
}

struct World {
  std::shared_ptr<FakeClock> clock = std::make_shared<FakeClock>();
  std::shared_ptr<LeaseStore> store = make_memory_store({.clock = clock});
  LeaderElector elector(std::shared_ptr<LeaseStore> s, Duration wait = 0s) {
    return LeaderElector(std::move(s), {.wait_time = wait, .lease_time = 10s},
                         {.clock = clock, .seed = 7});
  }
};

TEST(Metrics, AnElectionIsCountedWithItsLockResultHeldGaugeAndFencingToken) {
  World w;
  Metrics m;
  auto e = w.elector(w.store);
  auto sub = m.attach(e.events());
  std::uint64_t token = 0;
  ASSERT_TRUE(e.run_if_leader("job", [&](LeaderContext& ctx) { token = ctx.fencing_token(); }));
  ASSERT_TRUE(sub.wait_idle(5s));
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(leader_elections_total{lock="job",result="elected"})"), 1) << text;
  EXPECT_EQ(sample(text, R"(leader_leases_ended_total{lock="job",outcome="completed"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_leases_held{lock="job"})"), 0);
  EXPECT_EQ(sample(text, R"(leader_fencing_token{lock="job"})"), static_cast<double>(token));
  EXPECT_EQ(sample(text, R"(leader_lease_hold_duration_seconds_count{lock="job"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_event_drops_total{subscriber="metrics"})"), 0);
}

TEST(Metrics, HeldLeasesAreAGaugeThatFollowsAcquireAndRelease) {
  World w;
  Metrics m;
  auto e = w.elector(w.store);
  auto sub = m.attach(e.events());
  auto held = e.acquire("a");
  ASSERT_TRUE(held);
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(sample(m.serialize(), R"(leader_leases_held{lock="a"})"), 1);
  held.guard->release();
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(sample(m.serialize(), R"(leader_leases_held{lock="a"})"), 0);
}

TEST(Metrics, ASkipOnContentionIsCountedByReason) {
  World w;
  Metrics m;
  auto holder = w.elector(w.store);
  auto other = w.elector(w.store);
  auto sub = m.attach(other.events());
  auto held = holder.acquire("busy");
  ASSERT_TRUE(held);
  EXPECT_FALSE(other.run_if_leader("busy", [] {}));
  ASSERT_TRUE(sub.wait_idle(5s));
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(leader_elections_total{lock="busy",result="skipped"})"), 1) << text;
  EXPECT_EQ(sample(text, R"(leader_election_skips_total{lock="busy",reason="contention"})"), 1);
}

// Publishes `event` on `bus` and waits until `sub` handled it.
void publish(EventBus& bus, const Subscription& sub, ElectionEvent event) {
  bus.publish(std::move(event));
  ASSERT_TRUE(sub.wait_idle(5s));
}

TEST(Metrics, RenewFailuresLossesAndBackendErrorsAreCountedByCode) {
  EventBus bus;
  Metrics m;
  auto sub = m.attach(bus);
  publish(bus, sub,
          {.kind = EventKind::renew_failed, .lock = "l", .error_code = ErrorCode::unavailable});
  publish(bus, sub, {.kind = EventKind::renew_failed, .lock = "l"});
  publish(bus, sub, {.kind = EventKind::renewed, .lock = "l"});
  publish(bus, sub, {.kind = EventKind::lost, .lock = "l", .outcome = LeaseOutcome::expired});
  publish(
      bus, sub,
      {.kind = EventKind::backend_error, .lock = "l", .error_code = ErrorCode::deadline_exceeded});
  publish(bus, sub,
          {.kind = EventKind::skipped, .lock = "l", .skip_reason = SkipReason::backend_error});
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(leader_lease_renew_failures_total{code="unavailable",lock="l"})"), 1)
      << text;
  EXPECT_EQ(sample(text, R"(leader_lease_renew_failures_total{code="unknown",lock="l"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_lease_renewals_total{lock="l"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_leases_lost_total{lock="l",outcome="expired"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_backend_errors_total{code="deadline_exceeded",lock="l"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_election_skips_total{lock="l",reason="backend_error"})"), 1);
}

TEST(Metrics, ALocksCountersOfFixedLabelSetsStartAtZeroOnItsFirstEvent) {
  EventBus bus;
  Metrics m;
  auto sub = m.attach(bus);
  publish(bus, sub, {.kind = EventKind::elected, .lock = "z"});
  const std::string text = m.serialize();
  // The first loss then changes a series from 0 to 1: increase() and alerts see it.
  EXPECT_EQ(sample(text, R"(leader_leases_lost_total{lock="z",outcome="lost"})"), 0) << text;
  EXPECT_EQ(sample(text, R"(leader_election_skips_total{lock="z",reason="contention"})"), 0);
  EXPECT_EQ(sample(text, R"(leader_leases_ended_total{lock="z",outcome="failed"})"), 0);
  EXPECT_EQ(sample(text, R"(leader_elections_total{lock="z",result="elected"})"), 1);
  EXPECT_EQ(sample(text, R"(leader_lease_renew_failures_total{code="unknown",lock="z"})"), -1);
  Metrics unlabelled({.lock_label = false});  // no lock to wait for: present from the start
  EXPECT_EQ(sample(unlabelled.serialize(), R"(leader_leases_lost_total{outcome="expired"})"), 0);
}

TEST(Metrics, AFailOpenRunIsItsOwnResult) {
  EventBus bus;
  Metrics m;
  auto sub = m.attach(bus);
  ElectionEvent e{.kind = EventKind::elected, .lock = "f"};
  e.lease.fail_open = true;
  publish(bus, sub, e);
  EXPECT_EQ(sample(m.serialize(), R"(leader_elections_total{lock="f",result="fail_open"})"), 1);
}

TEST(Metrics, WithoutLockLabelsNoLockNameIsExportedAndHeldLeasesAreSummed) {
  World w;
  Metrics m({.lock_label = false});
  auto e = w.elector(w.store);
  auto sub = m.attach(e.events());
  auto a = e.acquire("secret-customer-a");
  auto b = e.acquire("secret-customer-b");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(w.elector(w.store).run_if_leader("secret-customer-a", [] {}));  // another bus
  ASSERT_TRUE(e.run_if_leader("secret-customer-c", [] {}));
  ASSERT_TRUE(sub.wait_idle(5s));
  const std::string text = m.serialize();
  EXPECT_EQ(text.find("secret-customer"), std::string::npos) << text;
  EXPECT_EQ(text.find("lock="), std::string::npos);
  EXPECT_EQ(text.find("leader_fencing_token{"), std::string::npos);
  EXPECT_EQ(sample(text, "leader_leases_held"), 2) << text;
  EXPECT_EQ(sample(text, R"(leader_elections_total{result="elected"})"), 3);
  a.guard->release();
  ASSERT_TRUE(sub.wait_idle(5s));
  EXPECT_EQ(sample(m.serialize(), "leader_leases_held"), 1);
}

// A store whose calls fail with a chosen code (or throw InvalidArgument), after a delay.
class FailingStore final : public LeaseStore {
 public:
  std::optional<ErrorCode> code;
  std::string_view scheme() const override { return "failing"; }
  Acquired try_acquire(const LeaseRequest&, Deadline) override {
    fail();
    return {};
  }
  Renewal renew(const Lease&, Duration ttl, Deadline) override {
    fail();
    return {LeaseStatus::ok, ttl};
  }
  LeaseStatus release(const Lease&, Duration, Deadline) override {
    fail();
    return LeaseStatus::ok;
  }
  LockState inspect(std::string_view lock, Deadline) override {
    std::this_thread::sleep_for(20ms);
    return {.lock = std::string(lock)};
  }
  void put_candidate(std::string_view, const Candidate&, Duration, Deadline) override { fail(); }
  std::vector<Candidate> list_candidates(std::string_view, Deadline) override { return {}; }
  void remove_candidate(std::string_view, std::string_view, Deadline) override {
    throw InvalidArgument("bad node id");
  }

 private:
  void fail() const {
    if (code) throw BackendError(*code, "failing", "down");
  }
};

TEST(Metrics, AnInstrumentedStoreRecordsLatencyPerOperationAndErrorsByCode) {
  Metrics m;
  auto inner = std::make_shared<FailingStore>();
  auto store = m.instrument(inner);
  EXPECT_EQ(store->scheme(), "failing");
  const Deadline deadline = Deadline::after(10s);
  EXPECT_FALSE(store->try_acquire({.lock = "x", .node_id = "n", .ttl = 1s}, deadline));
  EXPECT_EQ(store->inspect("x", deadline).lock, "x");  // results pass through
  inner->code = ErrorCode::unavailable;
  EXPECT_THROW((void)store->try_acquire({.lock = "x", .node_id = "n", .ttl = 1s}, deadline),
               BackendError);
  inner->code = ErrorCode::lease_lost;
  try {
    (void)store->renew(Lease{}, 1s, deadline);
    ADD_FAILURE() << "renew did not throw";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::lease_lost);  // the exception passes through unchanged
  }
  EXPECT_THROW(store->remove_candidate("g", "n", deadline), InvalidArgument);
  const std::string text = m.serialize();
  const std::string acq = R"({operation="acquire",store="failing"})";
  EXPECT_EQ(sample(text, "leader_store_request_duration_seconds_count" + acq), 2) << text;
  EXPECT_EQ(
      sample(text,
             R"(leader_store_request_duration_seconds_count{operation="release",store="failing"})"),
      0);
  // inspect slept 20 ms: it lands above the 10 ms bucket and within the 25 ms one.
  const std::string insp =
      R"(leader_store_request_duration_seconds_bucket{operation="inspect",store="failing",)";
  EXPECT_EQ(sample(text, insp + R"(le="0.01"})"), 0) << text;
  EXPECT_EQ(sample(text, insp + R"(le="10"})"), 1);
  EXPECT_EQ(
      sample(
          text,
          R"(leader_store_errors_total{code="unavailable",operation="acquire",store="failing"})"),
      1);
  EXPECT_EQ(
      sample(text,
             R"(leader_store_errors_total{code="lease_lost",operation="renew",store="failing"})"),
      1);
  EXPECT_EQ(
      sample(
          text,
          R"(leader_store_errors_total{code="invalid_argument",operation="remove_candidate",store="failing"})"),
      1);
}

TEST(Metrics, AnInstrumentedStoreElectsLikeTheStoreItWraps) {
  World w;
  Metrics m;
  auto e = w.elector(m.instrument(w.store));
  ASSERT_TRUE(e.run_if_leader("i", [] {}));
  const std::string text = m.serialize();
  EXPECT_EQ(
      sample(text,
             R"(leader_store_request_duration_seconds_count{operation="acquire",store="memory"})"),
      1)
      << text;
  EXPECT_EQ(
      sample(text,
             R"(leader_store_request_duration_seconds_count{operation="release",store="memory"})"),
      1);
}

TEST(Metrics, AnInstrumentedStoreKeepsTheListingCapabilityOfTheStoreItWraps) {
  World w;
  Metrics m;
  auto store = m.instrument(w.store);
  auto e = w.elector(store);
  ASSERT_TRUE(e.run_if_leader("listed", [&] {
    auto locks = list_locks(*store, "list", Deadline::after(1s));
    ASSERT_EQ(locks.size(), 1u);
    EXPECT_EQ(locks[0].lock, "listed");
  }));
  EXPECT_TRUE(list_locks(*store, "", Deadline::after(1s)).empty());
  // A wrapped store without the capability still says so, naming its scheme.
  auto failing = std::make_shared<FailingStore>();
  try {
    (void)list_locks(*m.instrument(failing), "", Deadline::after(1s));
    ADD_FAILURE() << "listing a store without LockLister succeeded";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_NE(std::string(e.what()).find("failing"), std::string::npos) << e.what();
  }
}

TEST(Metrics, DropsAndListenerFailuresOfATrackedSubscriptionAreExported) {
  EventBus bus;
  Metrics m;
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  bool go = false;
  int calls = 0;
  auto slow = bus.subscribe(
      [&](const ElectionEvent&) {
        std::unique_lock lock(mu);
        entered = true;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
        if (++calls == 1) throw std::runtime_error("listener failed");
      },
      {.queue_capacity = 1});
  m.track("slow", slow.counters());
  EXPECT_EQ(sample(m.serialize(), R"(leader_event_drops_total{subscriber="slow"})"), 0);
  bus.publish({.kind = EventKind::renewed, .lock = "d"});
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered; });  // the first event is being handled
  }
  bus.publish({.kind = EventKind::renewed, .lock = "d"});  // queued
  bus.publish({.kind = EventKind::renewed, .lock = "d"});  // dropped
  bus.publish({.kind = EventKind::renewed, .lock = "d"});  // dropped
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  ASSERT_TRUE(slow.wait_idle(5s));
  slow.unsubscribe();  // the counters stay readable after the subscription ended
  const std::string text = m.serialize();
  EXPECT_EQ(sample(text, R"(leader_event_drops_total{subscriber="slow"})"), 2) << text;
  EXPECT_EQ(sample(text, R"(leader_event_listener_failures_total{subscriber="slow"})"), 1);
}

TEST(Metrics, BadArgumentsAreRefusedNamingTheProblem) {
  EXPECT_THROW(Metrics({.latency_buckets = {0.1, 0.1}}), InvalidArgument);
  EXPECT_THROW(Metrics({.latency_buckets = {-1}}), InvalidArgument);
  try {
    Metrics m({.latency_buckets = {1, 0.5}});
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("strictly increasing"), std::string::npos) << e.what();
  }
  Metrics m;
  EXPECT_THROW((void)m.instrument(nullptr), InvalidArgument);
  EXPECT_THROW(m.track("", {}), InvalidArgument);
}

TEST(Metrics, SeriesOutliveTheMetricsObjectAndTheRegistryIsShared) {
  World w;
  auto registry = std::shared_ptr<prometheus::Registry>();
  Subscription sub;
  std::shared_ptr<LeaseStore> store;
  {
    Metrics m;
    registry = m.registry();
    sub = m.attach(w.elector(w.store).events());  // that elector's bus is gone at once: fine
    store = m.instrument(w.store);
    Metrics copy = m;
    EXPECT_EQ(copy.registry(), registry);
  }
  auto e = w.elector(store);
  ASSERT_TRUE(e.run_if_leader("late", [] {}));
  bool found = false;
  for (const auto& family : registry->Collect()) {
    if (family.name == "leader_store_request_duration_seconds") found = !family.metric.empty();
  }
  EXPECT_TRUE(found);
}

// The series table of docs/metrics.md (what the dashboard test checks against) is the registry:
// the rows of its "## Series" section before any subsection (the sidecar's own series follow in
// one: leader serve registers them, not the library).
TEST(Metrics, TheDocumentedSeriesTableListsExactlyTheRegisteredFamilies) {
  std::ifstream doc(LEADER_METRICS_DOC);
  ASSERT_TRUE(doc) << LEADER_METRICS_DOC;
  std::set<std::string> documented;
  bool in_series = false;
  for (std::string line; std::getline(doc, line);) {  // rows "| `leader_x` | counter |"
    if (line.rfind("#", 0) == 0) in_series = line == "## Series";
    if (!in_series) continue;
    const std::string open = "| `leader_";
    const std::size_t close = line.find("` | ");
    if (line.rfind(open, 0) != 0 || close == std::string::npos) continue;
    const std::string type = line.substr(close + 4, line.find(' ', close + 4) - close - 4);
    if (type == "counter" || type == "gauge" || type == "histogram") {
      documented.insert(line.substr(3, close - 3));
    }
  }
  // Families without a series are not exposed: feed every one first.
  Metrics m;
  EventBus bus;
  auto sub = m.attach(bus);
  for (EventKind kind :
       {EventKind::elected, EventKind::skipped, EventKind::renewed, EventKind::renew_failed,
        EventKind::lost, EventKind::released, EventKind::backend_error}) {
    ElectionEvent e{.kind = kind, .lock = "all", .started = std::chrono::system_clock::now()};
    e.state = LeadershipState{.lock = "all", .held = true, .holds = 1, .fencing_token = 3};
    bus.publish(std::move(e));
  }
  ASSERT_TRUE(sub.wait_idle(5s));
  auto failing = std::make_shared<FailingStore>();
  failing->code = ErrorCode::internal;
  EXPECT_THROW(m.instrument(failing)->put_candidate("g", {}, 1s, Deadline::after(1s)),
               BackendError);
  std::set<std::string> registered;
  for (const auto& family : m.registry()->Collect()) registered.insert(family.name);
  EXPECT_EQ(documented, registered);
  const std::string text = m.serialize();
  for (const std::string& name : registered) {
    EXPECT_NE(text.find("# TYPE " + name + " "), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace leader::metrics
