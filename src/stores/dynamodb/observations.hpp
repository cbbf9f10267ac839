#pragma once
// The local lease-expiry judge of this store: a process-wide record of which record version (RVN)
// each held slot showed, and since when on this process's steady clock. A contender may take a
// slot over once it has seen the same RVN unchanged for the record's lease duration (the AWS
// DynamoDB Lock Client's rule), or once the server-time stamp says so (the other judge, in
// dynamodb_store.cpp). No client wall clocks are compared. See README.md.

#include <mutex>
#include <string>
#include <unordered_map>

#include "leader/time.hpp"

namespace leader::dynamodb {

/// Observations of held slots, shared by every store instance of the process. Thread-safe.
class Observations {
 public:
  /// The process-wide instance.
  static Observations& shared();
  /// Records that `key` showed `rvn` at `seen_at` (the time the read *returned*); returns how
  /// long this process has seen that same `rvn` (zero when it is new).
  Duration observe(const std::string& key, const std::string& rvn, TimePoint seen_at);
  /// Forgets `key` (the slot was seen free, or this process wrote it).
  void forget(const std::string& key);
  /// True when `key` has an observation (the slot was last seen held).
  [[nodiscard]] bool seen_held(const std::string& key);
  /// Forgets everything, as a freshly started process would (tests).
  void clear();

 private:
  struct Seen {
    std::string rvn;
    TimePoint since;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Seen> seen_;
};

}  // namespace leader::dynamodb
