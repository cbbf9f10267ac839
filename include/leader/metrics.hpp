#pragma once
/// @file metrics.hpp
/// Prometheus metrics for electors, schedulers and stores (component leader::metrics, on
/// Debian's prometheus-cpp core; no HTTP server here: expose serialize() or registry() yourself,
/// e.g. with prometheus-cpp pull's Exposer or `leader serve`).
///
/// What is NOT guaranteed: that the election series count every event. They are fed by an
/// EventBus subscription (attach()), which drops events when its queue is full; the drops are
/// counted in leader_event_drops_total{subscriber="metrics"}. Store latency series (instrument())
/// are recorded on the calling thread and are exact.
///
/// Series, labels and their cardinality: docs/metrics.md. With Options::lock_label = false no
/// lock name ever becomes a label value (the per-lock series are summed over locks, and the
/// fencing token gauge, meaningful only per lock, is not exported).
///
/// Threads: every method may be called from any thread. Copies of a Metrics share its series;
/// the subscriptions and stores it returns keep those series alive after the Metrics is gone.

#include <memory>
#include <string>
#include <vector>

#include "leader/events.hpp"
#include "leader/store.hpp"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace leader::metrics {

/// Options of a Metrics.
struct Options {
  /// false: lock names never become label values (bounded cardinality with unbounded lock names).
  bool lock_label = true;
  /// Upper bounds (seconds) of the store latency histogram buckets, strictly increasing and
  /// positive; empty = 0.5 ms ... 10 s (docs/metrics.md).
  std::vector<double> latency_buckets{};
};

namespace detail {
class MetricsState;
}  // namespace detail

/// A set of leader series in one prometheus::Registry.
class Metrics {
 public:
  /// Creates the series families in a new registry. Throws InvalidArgument for bad buckets.
  explicit Metrics(const Options& options = {});

  /// The registry holding every series (to expose with an Exposer or merge into your own).
  [[nodiscard]] std::shared_ptr<prometheus::Registry> registry() const;

  /// `store` wrapped so that each call's latency (leader_store_request_duration_seconds) and
  /// each failure's code (leader_store_errors_total) are recorded under `store->scheme()`.
  /// Results and exceptions pass through unchanged. Throws InvalidArgument for a null store.
  [[nodiscard]] std::shared_ptr<LeaseStore> instrument(std::shared_ptr<LeaseStore> store);

  /// Feeds the election series from `bus` (an elector's events(), or a bus shared by several
  /// electors or a scheduler) until the returned subscription ends.
  [[nodiscard]] Subscription attach(EventBus& bus, const SubscribeOptions& options = {});

  /// Exports the drops and listener failures of another subscription (e.g. attach_history's)
  /// as leader_event_drops_total / leader_event_listener_failures_total{subscriber=`name`}.
  void track(const std::string& name, SubscriptionCounters counters);

  /// The Prometheus text exposition (format 0.0.4) of the registry, counters refreshed first.
  [[nodiscard]] std::string serialize() const;

 private:
  std::shared_ptr<detail::MetricsState> state_;
};

}  // namespace leader::metrics
