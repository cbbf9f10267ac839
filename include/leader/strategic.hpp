#pragma once
/// @file strategic.hpp
/// StrategicElector: candidates register with a TTL; each round a strategy picks the one winner
/// that runs (FIFO, seeded random, or scored). Only the picked candidate tries the lock, and the
/// lock still guarantees that at most one runs even when replicas momentarily disagree about the
/// candidate list.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "leader/elector.hpp"

namespace leader {

/// Picks the winner of a round from the unexpired candidates.
class ElectionStrategy {
 public:
  virtual ~ElectionStrategy() = default;
  /// The node id of the winner, or nullopt when there are no candidates.
  [[nodiscard]] virtual std::optional<std::string> pick(const std::vector<Candidate>& candidates,
                                                        WallTime now) = 0;
  /// A short name, e.g. "fifo".
  [[nodiscard]] virtual std::string name() const = 0;
};

/// A score in [0, 1]-ish; higher wins.
using Scorer = std::function<double(const Candidate&, WallTime now)>;

namespace strategies {
/// Earliest registration wins; ties broken by node id.
std::shared_ptr<ElectionStrategy> fifo();
/// A uniformly random candidate (sorted by node id, then drawn from a generator seeded with `seed`;
/// replicas with the same seed and the same round sequence agree).
std::shared_ptr<ElectionStrategy> random(std::uint64_t seed);
/// The highest score wins; ties broken by FIFO order.
std::shared_ptr<ElectionStrategy> scored(Scorer scorer, std::string name = "scored");
}  // namespace strategies

namespace scorers {
/// successes / (successes + failures), 0.5 for a candidate without history.
Scorer success_rate();
/// Time since last completion (or since registration), saturating at `horizon` -> 1.0.
Scorer idle_time(Duration horizon = std::chrono::hours(1));
/// 1.0 for a completion just now, decaying with `half_life`; 0 without completion.
Scorer recent_success(Duration half_life = std::chrono::minutes(10));
/// Sum of weight * scorer.
Scorer weighted(std::vector<std::pair<double, Scorer>> parts);
}  // namespace scorers

/// Options of a strategic election.
struct StrategicOptions {
  /// How long a registration lives without refresh.
  Duration candidate_ttl = std::chrono::seconds(30);
  /// Options of the lock the winner takes (wait_time 0 by default: only the winner tries).
  ElectionOptions election{.wait_time = Duration{0}};
  /// Metadata stored with this replica's registration.
  std::map<std::string, std::string> metadata{};
};

/// Strategy-picked election among registered candidates.
class StrategicElector {
 public:
  StrategicElector(std::shared_ptr<LeaseStore> store, std::string group,
                   std::shared_ptr<ElectionStrategy> strategy, StrategicOptions options = {},
                   ElectorHooks hooks = {});

  /// Registers (or refreshes) this replica as a candidate.
  void register_candidate();
  /// Removes this replica's registration.
  void unregister_candidate();
  /// The unexpired candidates.
  [[nodiscard]] std::vector<Candidate> candidates() const;
  /// Whom the strategy picks now, from a fresh candidate list.
  [[nodiscard]] std::optional<std::string> pick() const;
  /// This replica's node id.
  [[nodiscard]] const std::string& node_id() const { return elector_.options().node_id; }

  /// Refreshes the registration; runs `action` only if the strategy picks this replica and it
  /// gets the lock. Success and failure counts are updated automatically.
  template <class F>
  auto run_if_leader_result(std::string_view lock, F&& action, std::stop_token stop = {})
      -> RunResult<detail::action_result_t<F>> {
    if (auto not_mine = check_turn()) return *not_mine;
    auto result = elector_.run_if_leader_result(lock, std::forward<F>(action), std::move(stop));
    if (!result.skipped()) record_outcome(result.elected());
    return result;
  }

  /// As LeaderElector::run_if_leader, when picked; exceptions propagate after being counted.
  template <class F>
  auto run_if_leader(std::string_view lock, F&& action, std::stop_token stop = {}) {
    using T = detail::action_result_t<F>;
    auto skipped = check_turn();
    if constexpr (std::is_void_v<T>) {
      if (skipped) return false;
    } else {
      if (skipped) return std::optional<T>{};
    }
    bool ran = false;
    auto counted = [&](LeaderContext& ctx) -> decltype(auto) {
      ran = true;
      return detail::invoke_action(action, ctx);
    };
    try {
      auto out = elector_.run_if_leader(lock, counted, std::move(stop));
      if (ran) record_outcome(true);
      return out;
    } catch (...) {
      if (ran) record_outcome(false);
      throw;
    }
  }

 private:
  std::optional<Skipped> check_turn();
  void record_outcome(bool success);
  Candidate self_locked() const;

  LeaderElector elector_;
  std::string group_;
  std::shared_ptr<ElectionStrategy> strategy_;
  StrategicOptions options_;
  mutable std::mutex mu_;
  Candidate self_;
};

}  // namespace leader
