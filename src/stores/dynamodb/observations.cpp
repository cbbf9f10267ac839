#include "observations.hpp"

namespace leader::dynamodb {
namespace {

// Dropping observations is always safe (a contender only waits longer), so the map is simply
// cleared when it grows past this many slots.
constexpr std::size_t kMaxObservations = 100000;

}  // namespace

Observations& Observations::shared() {
  static Observations instance;
  return instance;
}

Duration Observations::observe(const std::string& key, const std::string& rvn, TimePoint seen_at) {
  std::lock_guard lock(mu_);
  auto it = seen_.find(key);
  if (it != seen_.end() && it->second.rvn == rvn)
    return std::chrono::duration_cast<Duration>(seen_at - it->second.since);
  if (it == seen_.end() && seen_.size() >= kMaxObservations) seen_.clear();
  seen_[key] = Seen{rvn, seen_at};
  return Duration{0};
}

void Observations::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  seen_.erase(key);
}

void Observations::clear() {
  std::lock_guard lock(mu_);
  seen_.clear();
}

bool Observations::seen_held(const std::string& key) {
  std::lock_guard lock(mu_);
  return seen_.count(key) != 0;
}

}  // namespace leader::dynamodb
