#include "leader/strategic.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/election_core.hpp"

namespace leader {
namespace {

bool fifo_before(const Candidate& a, const Candidate& b) {
  if (a.registered_at != b.registered_at) return a.registered_at < b.registered_at;
  return a.node_id < b.node_id;
}

class Fifo final : public ElectionStrategy {
 public:
  std::optional<std::string> pick(const std::vector<Candidate>& c, WallTime) override {
    if (c.empty()) return std::nullopt;
    return std::min_element(c.begin(), c.end(), fifo_before)->node_id;
  }
  std::string name() const override { return "fifo"; }
};

class Random final : public ElectionStrategy {
 public:
  explicit Random(std::uint64_t seed) : rng_(seed) {}
  std::optional<std::string> pick(const std::vector<Candidate>& c, WallTime) override {
    if (c.empty()) return std::nullopt;
    std::vector<std::string> ids;
    ids.reserve(c.size());
    for (const auto& x : c) ids.push_back(x.node_id);
    std::sort(ids.begin(), ids.end());
    std::lock_guard lock(mu_);
    std::uniform_int_distribution<std::size_t> d(0, ids.size() - 1);
    return ids[d(rng_)];
  }
  std::string name() const override { return "random"; }

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;
};

class Scored final : public ElectionStrategy {
 public:
  Scored(Scorer s, std::string name) : scorer_(std::move(s)), name_(std::move(name)) {}
  std::optional<std::string> pick(const std::vector<Candidate>& c, WallTime now) override {
    if (c.empty()) return std::nullopt;
    const Candidate* best = &c.front();
    double best_score = scorer_(*best, now);
    for (auto it = c.begin() + 1; it != c.end(); ++it) {
      const double s = scorer_(*it, now);
      if (s > best_score || (s == best_score && fifo_before(*it, *best))) {
        best = &*it;
        best_score = s;
      }
    }
    return best->node_id;
  }
  std::string name() const override { return name_; }

 private:
  Scorer scorer_;
  std::string name_;
};

double seconds(std::chrono::system_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

namespace strategies {
std::shared_ptr<ElectionStrategy> fifo() { return std::make_shared<Fifo>(); }
std::shared_ptr<ElectionStrategy> random(std::uint64_t seed) {
  return std::make_shared<Random>(seed);
}
std::shared_ptr<ElectionStrategy> scored(Scorer scorer, std::string name) {
  if (!scorer) throw InvalidArgument("strategies::scored: the scorer is empty");
  return std::make_shared<Scored>(std::move(scorer), std::move(name));
}
}  // namespace strategies

namespace scorers {
Scorer success_rate() {
  return [](const Candidate& c, WallTime) {
    auto total = c.successes + c.failures;
    return total == 0 ? 0.5 : static_cast<double>(c.successes) / static_cast<double>(total);
  };
}
Scorer idle_time(Duration horizon) {
  if (horizon <= Duration{0}) throw InvalidArgument("scorers::idle_time: horizon must be > 0");
  return [horizon](const Candidate& c, WallTime now) {
    WallTime since = c.last_completion.value_or(c.registered_at);
    double idle = std::max(0.0, seconds(now - since));
    return std::min(1.0, idle / std::chrono::duration<double>(horizon).count());
  };
}
Scorer recent_success(Duration half_life) {
  if (half_life <= Duration{0})
    throw InvalidArgument("scorers::recent_success: half_life must be > 0");
  return [half_life](const Candidate& c, WallTime now) {
    if (!c.last_completion || c.successes == 0) return 0.0;
    double age = std::max(0.0, seconds(now - *c.last_completion));
    return std::pow(0.5, age / std::chrono::duration<double>(half_life).count());
  };
}
Scorer weighted(std::vector<std::pair<double, Scorer>> parts) {
  if (parts.empty()) throw InvalidArgument("scorers::weighted: needs at least one scorer");
  for (const auto& [w, s] : parts)
    if (!s || !std::isfinite(w)) throw InvalidArgument("scorers::weighted: bad weight or scorer");
  return [parts = std::move(parts)](const Candidate& c, WallTime now) {
    double sum = 0;
    for (const auto& [w, s] : parts) sum += w * s(c, now);
    return sum;
  };
}
}  // namespace scorers

namespace detail {

// What copies of one StrategicElector share.
struct StrategicState {
  std::shared_ptr<LeaseStore> store;
  std::shared_ptr<EventBus> bus;
  std::string group;
  std::shared_ptr<ElectionStrategy> strategy;
  StrategicOptions options;
  Duration call_timeout{};
  std::mutex mu;
  Candidate self;

  Candidate self_copy() {
    std::lock_guard lock(mu);
    return self;
  }

  void publish(EventKind kind, std::string detail = {}) {
    try {
      bus->publish({.kind = kind, .lock = group, .detail = std::move(detail)});
    } catch (...) {  // events never disturb the election
    }
  }

  void register_candidate() {
    Candidate me = self_copy();
    store->put_candidate(group, me, options.candidate_ttl, Deadline::after(call_timeout));
    publish(EventKind::candidate_registered, me.node_id);
  }

  std::optional<std::string> pick() {
    return strategy->pick(store->list_candidates(group, Deadline::after(call_timeout)),
                          std::chrono::system_clock::now());
  }

  // Refreshes the registration and asks the strategy; a Skipped when it picks someone else.
  std::optional<Skipped> check_turn() {
    register_candidate();
    auto winner = pick();
    publish(EventKind::candidate_picked, winner.value_or(""));
    if (winner == self_copy().node_id) return std::nullopt;
    return Skipped{SkipReason::contention,
                   "strategy '" + strategy->name() + "' picked " + winner.value_or("nobody")};
  }

  void record_outcome(bool success) {
    {
      std::lock_guard lock(mu);
      (success ? self.successes : self.failures) += 1;
      self.last_completion = std::chrono::system_clock::now();
    }
    register_candidate();
  }
};

}  // namespace detail

StrategicElector::StrategicElector(std::shared_ptr<LeaseStore> store, std::string group,
                                   std::shared_ptr<ElectionStrategy> strategy,
                                   StrategicOptions options, ElectorHooks hooks)
    : Elector(std::make_shared<detail::ElectionCore>(store, options.election, 0, std::move(hooks)),
              {}),
      state_(std::make_shared<detail::StrategicState>()) {
  validate_lock_name(group);
  if (!strategy) throw InvalidArgument("StrategicElector: the strategy is null");
  if (options.candidate_ttl <= Duration{0})
    throw InvalidArgument("StrategicOptions.candidate_ttl must be > 0");
  check_duration_bound("StrategicOptions", "candidate_ttl", options.candidate_ttl);
  auto& st = *state_;
  st.store = std::move(store);
  st.bus = core_->events();
  st.group = std::move(group);
  st.strategy = std::move(strategy);
  st.call_timeout = core_->options().effective_call_timeout();
  st.self.node_id = core_->options().node_id;
  st.self.metadata = options.metadata;
  st.options = std::move(options);
  core_->set_turns({[state = state_](const std::string&) { return state->check_turn(); },
                    [state = state_](bool completed) { state->record_outcome(completed); }});
}

void StrategicElector::register_candidate() const { state_->register_candidate(); }

void StrategicElector::unregister_candidate() const {
  state_->store->remove_candidate(state_->group, node_id(), Deadline::after(state_->call_timeout));
  state_->publish(EventKind::candidate_unregistered, node_id());
}

std::vector<Candidate> StrategicElector::candidates() const {
  return state_->store->list_candidates(state_->group, Deadline::after(state_->call_timeout));
}

std::optional<std::string> StrategicElector::pick() const { return state_->pick(); }

const std::string& StrategicElector::group() const { return state_->group; }

}  // namespace leader
