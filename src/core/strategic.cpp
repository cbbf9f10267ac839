#include "leader/strategic.hpp"

#include <algorithm>
#include <cmath>
#include <random>

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
    const Candidate* best = nullptr;
    double best_score = 0;
    for (const auto& x : c) {
      double s = scorer_(x, now);
      if (!best || s > best_score || (s == best_score && fifo_before(x, *best))) {
        best = &x;
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

StrategicElector::StrategicElector(std::shared_ptr<LeaseStore> store, std::string group,
                                   std::shared_ptr<ElectionStrategy> strategy,
                                   StrategicOptions options, ElectorHooks hooks)
    : elector_(std::move(store), options.election, std::move(hooks)),
      group_(std::move(group)),
      strategy_(std::move(strategy)),
      options_(std::move(options)) {
  validate_lock_name(group_);
  if (!strategy_) throw InvalidArgument("StrategicElector: the strategy is null");
  if (options_.candidate_ttl <= Duration{0})
    throw InvalidArgument("StrategicOptions.candidate_ttl must be > 0");
  check_duration_bound("StrategicOptions", "candidate_ttl", options_.candidate_ttl);
  self_.node_id = elector_.options().node_id;
  self_.metadata = options_.metadata;
}

Candidate StrategicElector::self_locked() const {
  std::lock_guard lock(mu_);
  return self_;
}

void StrategicElector::register_candidate() {
  elector_.store()->put_candidate(group_, self_locked(), options_.candidate_ttl,
                                  Deadline::after(elector_.options().effective_call_timeout()));
}

void StrategicElector::unregister_candidate() {
  elector_.store()->remove_candidate(group_, node_id(),
                                     Deadline::after(elector_.options().effective_call_timeout()));
}

std::vector<Candidate> StrategicElector::candidates() const {
  return elector_.store()->list_candidates(
      group_, Deadline::after(elector_.options().effective_call_timeout()));
}

std::optional<std::string> StrategicElector::pick() const {
  return strategy_->pick(candidates(), std::chrono::system_clock::now());
}

std::optional<Skipped> StrategicElector::check_turn() {
  register_candidate();
  auto winner = pick();
  if (winner == node_id()) return std::nullopt;
  return Skipped{SkipReason::contention,
                 "strategy '" + strategy_->name() + "' picked " + winner.value_or("nobody")};
}

void StrategicElector::record_outcome(bool success) {
  {
    std::lock_guard lock(mu_);
    (success ? self_.successes : self_.failures) += 1;
    self_.last_completion = std::chrono::system_clock::now();
  }
  try {
    register_candidate();
  } catch (...) {  // the counts are re-sent with the next registration
  }
}

}  // namespace leader
