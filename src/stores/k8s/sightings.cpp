#include "sightings.hpp"

namespace leader::k8s {

Sightings& Sightings::shared() {
  static Sightings instance;
  return instance;
}

TimePoint Sightings::observe(const std::string& key, const std::string& resource_version,
                             TimePoint seen_at) {
  std::lock_guard lock(mu_);
  auto [it, added] = seen_.try_emplace(key, Seen{resource_version, seen_at});
  if (!added && it->second.resource_version != resource_version)
    it->second = {resource_version, seen_at};
  if (!added && seen_at < it->second.since) it->second.since = seen_at;
  return it->second.since;
}

void Sightings::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  seen_.erase(key);
}

}  // namespace leader::k8s
