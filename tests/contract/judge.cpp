#include "judge.hpp"

#include <mutex>

namespace leader::contract {

Verdict judge(const Backend& b, const std::string& name, JudgedRun run) {
  Verdict v;
  std::mutex mu;
  std::unique_ptr<test::Observer> observer;
  ElectorHooks hooks;
  hooks.clock = run.clock;
  LeaderElector elector(run.store, run.options, hooks);
  auto action = [&](LeaderContext& ctx) {
    v.ran = true;
    v.started = SteadyClock::now();
    std::stop_callback on_stop(ctx.stop_token(), [&] {
      std::lock_guard lock(mu);
      if (!v.stop) v.stop = SteadyClock::now();
    });
    observer = std::make_unique<test::Observer>(
        b.open(), ctx.lock_name(),
        test::ObserverOptions{.ttl = b.lease_unit * 10, .node_id = "observer"});
    run.scenario(ctx);
    observer->wait_for_takeover(run.hold_limit);
    const TimePoint deadline = ctx.deadline();
    std::lock_guard lock(mu);
    v.action_end = SteadyClock::now();
    if (!run.clock) v.deadline = deadline;  // another clock's time points are not steady time
  };
  auto result = run.door ? run.door->run(elector, name, action, {})
                         : elector.run_if_leader_result(name, action);
  if (result.failed()) std::rethrow_exception(result.error());
  if (observer) {
    observer->wait_for_takeover(b.lease_unit * 4);  // after a release, the next attempt gets in
    observer->stop();
    v.takeover = run.frozen_until ? observer->earliest_takeover(run.frozen_until())
                                  : observer->earliest_takeover();
    v.observer_attempts = observer->attempts();
    v.observer_detail = observer->describe();
    v.takeover_seen = observer->takeover_seen();
  }
  return v;
}

namespace {
// The holder's reckoning: its stop signal, or its own deadline when the signal came after it.
TimePoint reckoned(const Verdict& v) {
  return v.deadline && *v.stop > *v.deadline ? *v.deadline : *v.stop;
}
}  // namespace

bool inconclusive(const Verdict& v, Duration gap) {
  if (!v.ran || !v.stop || !v.takeover || !v.takeover_seen) return false;
  const TimePoint r = reckoned(v);
  return *v.takeover - r < gap && *v.takeover_seen - r >= gap;
}

Duration scheduling_slack(Duration margin) { return std::min(margin / 2, Duration{100}); }

void expect_stop_before_takeover(const Verdict& v, Duration gap) {
  ASSERT_TRUE(v.ran) << "the holder was never elected";
  ASSERT_TRUE(v.takeover.has_value())
      << "the observer never got in (" << v.observer_attempts << " attempts): nothing was judged";
  if (!v.stop) {
    ASSERT_TRUE(v.action_end.has_value());
    EXPECT_GE(*v.takeover, *v.action_end)
        << "the server let another owner in while the holder's action still ran, and the holder "
           "never got a stop signal";
    return;
  }
  // The library's reckoning is its deadline; a signal that reached the action after it was delayed
  // by scheduling, which is measured and bounded separately (the judge is the observer: the server
  // decides when another owner got in, never the holder's clock).
  auto at = [&](const std::optional<TimePoint>& t) {
    return t && v.started ? std::to_string(std::chrono::duration_cast<Ms>(*t - *v.started).count())
                          : std::string("-");
  };
  const TimePoint held_until = reckoned(v);
  const Ms late = std::chrono::duration_cast<Ms>(*v.stop - held_until);
  ::testing::Test::RecordProperty("stop_late_ms", std::to_string(late.count()));
  EXPECT_LE(late, kStopDeliveryBound) << "the stop signal reached the action " << late.count()
                                      << " ms after the holder's own deadline";
  const auto lead = std::chrono::duration_cast<Ms>(*v.takeover - held_until);
  const auto signal_lead = std::chrono::duration_cast<Ms>(*v.takeover - *v.stop);
  ::testing::Test::RecordProperty("stop_before_takeover_ms", std::to_string(signal_lead.count()));
  EXPECT_GE(lead, gap) << "the holder reckoned its lease lost " << lead.count()
                       << " ms before the server let another owner in (its stop signal "
                       << signal_lead.count() << " ms before); required >= " << gap.count()
                       << " ms (safety margin - scheduling slack); since the action started: stop "
                       << at(v.stop) << ", holder's deadline " << at(v.deadline) << ", takeover "
                       << at(v.takeover) << " ms; the takeover: " << v.observer_detail;
}

}  // namespace leader::contract
