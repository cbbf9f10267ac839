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

namespace detail {
struct StrategicState;
}

/// Strategy-picked election among registered candidates. Every run_if_leader form of the other
/// electors (including the future, executor and asio forms of async.hpp and asio/) refreshes the
/// registration, runs only when the strategy picks this replica and it gets the lock, and
/// updates the success and failure counts when the lease ends. Cheap to copy; copies share state.
class StrategicElector : public Elector {
 public:
  /// Validates the group name, strategy and options (InvalidArgument).
  StrategicElector(std::shared_ptr<LeaseStore> store, std::string group,
                   std::shared_ptr<ElectionStrategy> strategy, StrategicOptions options = {},
                   ElectorHooks hooks = {});

  /// Registers (or refreshes) this replica as a candidate.
  void register_candidate() const;
  /// Removes this replica's registration.
  void unregister_candidate() const;
  /// The unexpired candidates.
  [[nodiscard]] std::vector<Candidate> candidates() const;
  /// Whom the strategy picks now, from a fresh candidate list.
  [[nodiscard]] std::optional<std::string> pick() const;
  /// This replica's node id.
  [[nodiscard]] const std::string& node_id() const { return options().node_id; }
  /// The candidate group.
  [[nodiscard]] const std::string& group() const;

 private:
  std::shared_ptr<detail::StrategicState> state_;
};

}  // namespace leader
