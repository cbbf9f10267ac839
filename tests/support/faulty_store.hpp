#pragma once
// A LeaseStore wrapper that injects faults between the library and a real store: renewals that
// fail, renewals delayed on the way to the server, and a ttl cap that really asks the server for
// less than the caller requested (a store that grants less than asked). Generic across stores, so
// one contract case covers all of them unchanged.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "leader/store.hpp"

namespace leader::test {

/// Forwards every call to `inner`, applying the faults currently switched on.
/// Thread-safety: the knobs are atomics and may be changed while calls are in flight.
class FaultyStore final : public LeaseStore {
 public:
  /// Wraps `inner` with every fault switched off.
  explicit FaultyStore(std::shared_ptr<LeaseStore> inner);

  /// When true, renew throws BackendError(unavailable) without reaching the server.
  std::atomic<bool> fail_renew{false};
  /// Sleep before a renew is forwarded (the request is delayed on its way to the server).
  std::atomic<Duration> renew_delay{Duration{0}};
  /// Sleep after a renew returned from the server, before its reply reaches the caller.
  std::atomic<Duration> reply_delay{Duration{0}};
  /// When > 0, the two delays apply only to renewals that ask for exactly this ttl.
  std::atomic<Duration> delay_only_ttl{Duration{0}};
  /// When > 0, acquire and renew ask the server for min(ttl, cap) and report that as granted.
  std::atomic<Duration> ttl_cap{Duration{0}};

  /// Renew calls received (forwarded or failed).
  [[nodiscard]] int renew_calls() const { return renew_calls_.load(); }
  /// Renew calls the server has answered (counted before any reply delay).
  [[nodiscard]] int renew_answered() const { return renew_answered_.load(); }
  /// Renew calls that returned ok.
  [[nodiscard]] int renew_ok() const { return renew_ok_.load(); }
  /// The acquire and renew calls so far, one line each with their instants in ms since `origin`
  /// (entered, forwarded to the inner store, returned) and their outcome: for failure messages.
  [[nodiscard]] std::string timeline(TimePoint origin) const;
  /// The wrapped store.
  [[nodiscard]] const std::shared_ptr<LeaseStore>& inner() const { return inner_; }

  [[nodiscard]] std::string_view scheme() const override;
  Acquired try_acquire(const LeaseRequest& request, Deadline deadline) override;
  Renewal renew(const Lease& lease, Duration ttl, Deadline deadline) override;
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline) override;
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline deadline) override;
  void put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                     Deadline deadline) override;
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view group,
                                                       Deadline deadline) override;
  void remove_candidate(std::string_view group, std::string_view node_id,
                        Deadline deadline) override;

 private:
  [[nodiscard]] Duration capped(Duration ttl) const;
  [[nodiscard]] bool delayed(Duration ttl) const;

  struct Call {
    const char* what;
    TimePoint entered, forwarded, returned;
    std::string outcome;
  };
  void record(Call call);

  std::shared_ptr<LeaseStore> inner_;
  mutable std::mutex calls_mu_;
  std::vector<Call> calls_;  // guarded by calls_mu_
  std::atomic<int> renew_calls_{0};
  std::atomic<int> renew_answered_{0};
  std::atomic<int> renew_ok_{0};
};

}  // namespace leader::test
