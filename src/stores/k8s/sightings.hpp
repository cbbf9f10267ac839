#pragma once
// The expiry judge of this store, as client-go's LeaderElector judges a Lease: a process-wide
// record of which resourceVersion each held Lease object showed and since when on this process's
// steady clock. A contender may take a Lease over only once it has seen the same resourceVersion
// for the record's leaseDurationSeconds. No wall clocks are compared. See README.md, "Safety".

#include <mutex>
#include <string>
#include <unordered_map>

#include "leader/time.hpp"

namespace leader::k8s {

/// First sightings of resourceVersions, shared by every store instance of the process.
/// Thread-safe.
class Sightings {
 public:
  /// The process-wide instance.
  static Sightings& shared();
  /// Records that object `key` showed `resource_version` in a reply complete at `seen_at`;
  /// returns the earliest time this process saw that same version.
  TimePoint observe(const std::string& key, const std::string& resource_version, TimePoint seen_at);
  /// Forgets `key` (seen free or deleted).
  void forget(const std::string& key);

 private:
  struct Seen {
    std::string resource_version;
    TimePoint since;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace leader::k8s
