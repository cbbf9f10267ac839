// leader::metrics::Metrics: the series families and the EventBus listener that feeds them.
// Naming follows the Prometheus conventions (https://prometheus.io/docs/practices/naming/):
// leader_ prefix, _total for counters, base units (_seconds), bounded label values.

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "leader/errors.hpp"
#include "metrics_state.hpp"

namespace leader::metrics {
namespace detail {
namespace {

const std::vector<double> kDefaultLatencyBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                    0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kHoldBuckets = {0.1, 1, 5, 15, 60, 300, 900, 3600, 14400, 86400};

std::vector<double> checked_buckets(const std::vector<double>& buckets) {
  if (buckets.empty()) return kDefaultLatencyBuckets;
  double previous = 0;
  for (double b : buckets) {
    if (!std::isfinite(b) || b <= previous) {
      throw InvalidArgument(
          "metrics: latency_buckets must be finite, positive and strictly increasing; " +
          std::to_string(b) + " follows " + std::to_string(previous));
    }
    previous = b;
  }
  return buckets;
}

template <typename Builder>
auto& family(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

std::string code_label(const std::optional<ErrorCode>& code) {
  return code ? std::string(to_string(*code)) : std::string("unknown");
}

}  // namespace

std::string_view to_string(Operation operation) noexcept {
  switch (operation) {
    case Operation::acquire:
      return "acquire";
    case Operation::renew:
      return "renew";
    case Operation::release:
      return "release";
    case Operation::inspect:
      return "inspect";
    case Operation::put_candidate:
      return "put_candidate";
    case Operation::list_candidates:
      return "list_candidates";
    case Operation::remove_candidate:
      return "remove_candidate";
  }
  return "unknown";
}

MetricsState::MetricsState(const Options& options)
    : options_{options.lock_label, checked_buckets(options.latency_buckets)},
      registry_(std::make_shared<prometheus::Registry>()),
      elections_(family(prometheus::BuildCounter(), "leader_elections_total",
                        "Election attempts by result (elected, fail_open, skipped)", *registry_)),
      skips_(family(prometheus::BuildCounter(), "leader_election_skips_total",
                    "Elections that did not run their action, by reason", *registry_)),
      renewals_(family(prometheus::BuildCounter(), "leader_lease_renewals_total",
                       "Confirmed lease renewals", *registry_)),
      renew_failures_(family(prometheus::BuildCounter(), "leader_lease_renew_failures_total",
                             "Renewals with an unknown outcome, by error code", *registry_)),
      leases_lost_(family(prometheus::BuildCounter(), "leader_leases_lost_total",
                          "Leases lost while held (outcome lost or expired)", *registry_)),
      leases_ended_(family(prometheus::BuildCounter(), "leader_leases_ended_total",
                           "Held leases that ended, by outcome", *registry_)),
      hold_duration_(family(prometheus::BuildHistogram(), "leader_lease_hold_duration_seconds",
                            "How long leases were held, acquisition to end", *registry_)),
      backend_errors_(family(prometheus::BuildCounter(), "leader_backend_errors_total",
                             "Acquisitions that failed with a store error, by error code",
                             *registry_)),
      leases_held_(family(prometheus::BuildGauge(), "leader_leases_held",
                          "Leases this process holds now", *registry_)),
      fencing_token_(family(prometheus::BuildGauge(), "leader_fencing_token",
                            "Fencing token of the latest lease of a lock held here", *registry_)),
      store_latency_(family(prometheus::BuildHistogram(), "leader_store_request_duration_seconds",
                            "Latency of store calls, by store scheme and operation", *registry_)),
      store_errors_(family(prometheus::BuildCounter(), "leader_store_errors_total",
                           "Store calls that threw, by store scheme, operation and error code",
                           *registry_)),
      event_drops_(family(prometheus::BuildCounter(), "leader_event_drops_total",
                          "Events a subscription dropped because its queue was full", *registry_)),
      listener_failures_(family(prometheus::BuildCounter(), "leader_event_listener_failures_total",
                                "Listener calls of a subscription that threw", *registry_)) {
  if (!options_.lock_label) first_sight("");
}

void MetricsState::first_sight(const std::string& lock) {
  {
    std::lock_guard guard(mu_);
    if (!seen_locks_.insert(lock).second) return;
  }
  for (const char* result : {"elected", "fail_open", "skipped"}) {
    elections_.Add(lock_labels(lock, {{"result", result}}));
  }
  for (const char* reason : {"contention", "backend_error", "cancelled"}) {
    skips_.Add(lock_labels(lock, {{"reason", reason}}));
  }
  for (const char* outcome : {"lost", "expired"}) {
    leases_lost_.Add(lock_labels(lock, {{"outcome", outcome}}));
  }
  for (const char* outcome : {"completed", "failed", "lost", "expired"}) {
    leases_ended_.Add(lock_labels(lock, {{"outcome", outcome}}));
  }
  renewals_.Add(lock_labels(lock));
}

prometheus::Labels MetricsState::lock_labels(const std::string& lock,
                                             prometheus::Labels more) const {
  if (options_.lock_label) more.emplace("lock", lock);
  return more;
}

void MetricsState::on_event(const ElectionEvent& event) {
  const std::string& lock = event.lock;
  if (options_.lock_label && event.kind != EventKind::candidate_registered &&
      event.kind != EventKind::candidate_unregistered &&
      event.kind != EventKind::candidate_picked) {
    first_sight(lock);
  }
  switch (event.kind) {
    case EventKind::elected:
      elections_
          .Add(lock_labels(lock, {{"result", event.lease.fail_open ? "fail_open" : "elected"}}))
          .Increment();
      break;
    case EventKind::skipped: {
      elections_.Add(lock_labels(lock, {{"result", "skipped"}})).Increment();
      const std::string reason =
          event.skip_reason ? std::string(to_string(*event.skip_reason)) : "unknown";
      skips_.Add(lock_labels(lock, {{"reason", reason}})).Increment();
      break;
    }
    case EventKind::renewed:
      renewals_.Add(lock_labels(lock)).Increment();
      break;
    case EventKind::renew_failed:
      renew_failures_.Add(lock_labels(lock, {{"code", code_label(event.error_code)}})).Increment();
      break;
    case EventKind::lost: {
      const LeaseOutcome outcome = event.outcome.value_or(LeaseOutcome::lost);
      leases_lost_.Add(lock_labels(lock, {{"outcome", std::string(to_string(outcome))}}))
          .Increment();
      break;
    }
    case EventKind::released: {
      const LeaseOutcome outcome = event.outcome.value_or(LeaseOutcome::completed);
      leases_ended_.Add(lock_labels(lock, {{"outcome", std::string(to_string(outcome))}}))
          .Increment();
      if (!event.lease.fail_open && event.started.time_since_epoch().count() != 0) {
        const std::chrono::duration<double> held = event.at - event.started;
        hold_duration_.Add(lock_labels(lock), kHoldBuckets).Observe(std::max(0.0, held.count()));
      }
      break;
    }
    case EventKind::backend_error:
      backend_errors_.Add(lock_labels(lock, {{"code", code_label(event.error_code)}})).Increment();
      break;
    case EventKind::candidate_registered:
    case EventKind::candidate_unregistered:
    case EventKind::candidate_picked:
    case EventKind::firing_started:  // a scheduler's firings: counted by their lease events
    case EventKind::firing_finished:
    case EventKind::firing_skipped:
    case EventKind::firing_misfired:
      break;
  }
  if (event.state) on_state(*event.state);
}

void MetricsState::on_state(const LeadershipState& state) {
  if (options_.lock_label) {
    leases_held_.Add({{"lock", state.lock}}).Set(state.holds);
    if (state.held) {
      fencing_token_.Add({{"lock", state.lock}}).Set(static_cast<double>(state.fencing_token));
    }
    return;
  }
  int total = 0;
  {
    std::lock_guard lock(mu_);
    if (state.holds > 0) {
      holds_[state.lock] = state.holds;
    } else {
      holds_.erase(state.lock);
    }
    for (const auto& [name, holds] : holds_) total += holds;
    leases_held_.Add({}).Set(total);  // under mu_: the sets of two events never cross
  }
}

StoreHistograms MetricsState::store_histograms(const std::string& store) {
  std::lock_guard lock(mu_);
  auto it = stores_.find(store);
  if (it != stores_.end()) return it->second;
  StoreHistograms histograms{};
  for (std::size_t i = 0; i < kOperations; ++i) {
    const std::string op(to_string(static_cast<Operation>(i)));
    histograms[i] =
        &store_latency_.Add({{"store", store}, {"operation", op}}, options_.latency_buckets);
  }
  stores_.emplace(store, histograms);
  return histograms;
}

void MetricsState::store_error(const std::string& store, Operation operation,
                               const std::string& code) {
  store_errors_
      .Add({{"store", store}, {"operation", std::string(to_string(operation))}, {"code", code}})
      .Increment();
}

void MetricsState::track(const std::string& name, SubscriptionCounters counters) {
  if (name.empty()) throw InvalidArgument("metrics: track() needs a subscriber name");
  std::lock_guard lock(mu_);
  event_drops_.Add({{"subscriber", name}});  // exported as 0 from the start
  listener_failures_.Add({{"subscriber", name}});
  tracked_.push_back(Tracked{name, std::move(counters)});
}

void MetricsState::refresh_drops() {
  std::lock_guard lock(mu_);
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    Tracked& t = *it;
    const bool ended = !t.counters.active();  // read first: its last counts are final then
    const std::uint64_t dropped = t.counters.dropped();
    const std::uint64_t failures = t.counters.failures();
    if (dropped > t.dropped) {
      event_drops_.Add({{"subscriber", t.name}})
          .Increment(static_cast<double>(dropped - t.dropped));
      t.dropped = dropped;
    }
    if (failures > t.failures) {
      listener_failures_.Add({{"subscriber", t.name}})
          .Increment(static_cast<double>(failures - t.failures));
      t.failures = failures;
    }
    it = ended ? tracked_.erase(it) : it + 1;  // an ended subscription is never read again
  }
}

}  // namespace detail

Metrics::Metrics(const Options& options)
    : state_(std::make_shared<detail::MetricsState>(options)) {}

std::shared_ptr<prometheus::Registry> Metrics::registry() const { return state_->registry(); }

Subscription Metrics::attach(EventBus& bus, const SubscribeOptions& options) {
  Subscription sub = bus.subscribe(
      [state = state_](const ElectionEvent& event) {
        state->on_event(event);
        state->refresh_drops();
      },
      options);
  state_->track("metrics", sub.counters());
  return sub;
}

void Metrics::track(const std::string& name, SubscriptionCounters counters) {
  state_->track(name, std::move(counters));
}

std::string Metrics::serialize() const {
  state_->refresh_drops();
  return prometheus::TextSerializer().Serialize(state_->registry()->Collect());
}

}  // namespace leader::metrics
