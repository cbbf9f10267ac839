#pragma once
// Internal: the series of one leader::metrics::Metrics and the code that feeds them.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "leader/events.hpp"
#include "leader/metrics.hpp"

namespace leader::metrics::detail {

/// The store calls whose latency is recorded, in LeaseStore order.
enum class Operation : std::uint8_t {
  acquire,
  renew,
  release,
  inspect,
  put_candidate,
  list_candidates,
  remove_candidate,
};
inline constexpr std::size_t kOperations = 7;

/// "acquire", "renew", ...
std::string_view to_string(Operation operation) noexcept;

/// The histograms of one store scheme, one per operation (cached: the hot path adds no lookup).
using StoreHistograms = std::array<prometheus::Histogram*, kOperations>;

/// Every family of a Metrics and what feeds them. Thread-safe.
class MetricsState {
 public:
  explicit MetricsState(const Options& options);

  [[nodiscard]] const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }
  [[nodiscard]] bool lock_label() const { return options_.lock_label; }

  /// Updates the election series for one bus event (an attach() subscription's listener).
  void on_event(const ElectionEvent& event);

  /// The latency histograms of `store` (a scheme), created on first use.
  StoreHistograms store_histograms(const std::string& store);
  /// Counts a failed store call.
  void store_error(const std::string& store, Operation operation, const std::string& code);

  /// Exports `counters` under `name` (see Metrics::track).
  void track(const std::string& name, SubscriptionCounters counters);
  /// Adds the drops and failures of tracked subscriptions since the last refresh.
  void refresh_drops();

 private:
  struct Tracked {
    std::string name;
    SubscriptionCounters counters;
    std::uint64_t dropped = 0;   // already added to the counter
    std::uint64_t failures = 0;  // already added to the counter
  };

  /// Labels {lock: name} when lock_label, else none, plus `more`.
  [[nodiscard]] prometheus::Labels lock_labels(const std::string& lock,
                                               prometheus::Labels more = {}) const;
  void on_state(const LeadershipState& state);
  /// Creates the lock's series of the fixed label sets at 0 on its first event (so that the first
  /// increment is a visible change for rate() and increase()).
  void first_sight(const std::string& lock);

  Options options_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& elections_;
  prometheus::Family<prometheus::Counter>& skips_;
  prometheus::Family<prometheus::Counter>& renewals_;
  prometheus::Family<prometheus::Counter>& renew_failures_;
  prometheus::Family<prometheus::Counter>& leases_lost_;
  prometheus::Family<prometheus::Counter>& leases_ended_;
  prometheus::Family<prometheus::Histogram>& hold_duration_;
  prometheus::Family<prometheus::Counter>& backend_errors_;
  prometheus::Family<prometheus::Gauge>& leases_held_;
  prometheus::Family<prometheus::Gauge>& fencing_token_;
  prometheus::Family<prometheus::Histogram>& store_latency_;
  prometheus::Family<prometheus::Counter>& store_errors_;
  prometheus::Family<prometheus::Counter>& event_drops_;
  prometheus::Family<prometheus::Counter>& listener_failures_;

  std::mutex mu_;
  std::map<std::string, int, std::less<>> holds_;  // lock -> leases held (for the lock-free sum)
  std::map<std::string, StoreHistograms, std::less<>> stores_;
  std::set<std::string, std::less<>> seen_locks_;
  std::vector<Tracked> tracked_;
};

}  // namespace leader::metrics::detail
