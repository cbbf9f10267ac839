#pragma once
/// @file options.hpp
/// Election options with their defaults, validated up front: invalid values throw
/// InvalidArgument naming the field and the rule.

#include <string>
#include <string_view>

#include "leader/names.hpp"
#include "leader/time.hpp"

namespace leader {

/// The longest duration any option (and `extend()`) accepts: 365 days.
inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 365);

/// Throws InvalidArgument("<type>.<field> = ... breaks the rule: <field> <= 365 days") when
/// `value` exceeds kMaxDuration.
void check_duration_bound(std::string_view type, std::string_view field, Duration value);

/// What to do when the store fails while acquiring.
enum class OnBackendError {
  rethrow,    ///< throw the BackendError (the default: never a silent skip)
  skip,       ///< report Skipped{backend_error}
  fail_open,  ///< run the action without the lock, reported as fail-open
};

/// Options of a single-leader election.
struct ElectionOptions {
  /// How long to retry when another owner holds the lock; 0 = one attempt.
  Duration wait_time = std::chrono::seconds(5);
  /// Server-side lease time (lockAtMostFor).
  Duration lease_time = std::chrono::seconds(60);
  /// The lease stays held at least this long after acquisition (lockAtLeastFor): counted from
  /// the acquire's reply, so the server holds it at least min_lease_time after its grant, and at
  /// most one acquire round trip plus one release latency longer (clock-rate drift aside).
  Duration min_lease_time = Duration{0};
  /// Renew the lease at a third of its granted ttl while the action runs.
  bool auto_extend = false;
  /// Who this replica is; shown by inspect().
  std::string node_id = default_node_id();
  /// Reaction to a backend failure while acquiring.
  OnBackendError on_backend_error = OnBackendError::rethrow;
  /// The local deadline is `sent + granted ttl - safety_margin`; 0 = a fifth of each grant. An
  /// explicit margin is never shrunk: it must be < lease_time (<= lease_time / 2 with
  /// auto_extend), and a shorter grant it does not fit is refused (failed_precondition).
  Duration safety_margin = Duration{0};
  /// Bound of one store call (acquire, renew, release); 0 = min(lease_time / 3, 10 s).
  Duration call_timeout = Duration{0};
  /// A run_if_leader nested in an action this thread runs under the same lock (same store) runs
  /// directly under the outer lease (same token, same stop_token). Off: it tries the lock like
  /// any caller, which skips it (a group elector may give it another slot).
  bool reentrant = false;
  /// Fair waiting (docs/design.md, "Waiting"): callers of this process that wait (wait_time > 0)
  /// for the same lock of the same store are served in arrival order; only the first asks the
  /// store, woken at once by this process's releases and, where the store can watch the lock,
  /// by the store's notification of another process's release. Off: each caller asks on its own
  /// and retries with backoff (faster hand-overs under saturation; the caller that just released
  /// usually wins again and others can wait their whole wait_time).
  bool fair = true;

  /// Throws InvalidArgument when a rule is broken.
  void validate() const;
  /// safety_margin with the default applied to a grant of lease_time.
  [[nodiscard]] Duration effective_safety_margin() const;
  /// call_timeout with the default applied.
  [[nodiscard]] Duration effective_call_timeout() const;
};

/// Options of an N-slot group election (at most max_leaders concurrent holders).
struct GroupOptions {
  /// The options of each slot's lease, as for a single-leader election.
  ElectionOptions election{};
  /// Number of slots: 1..1000.
  int max_leaders = 2;

  /// Throws InvalidArgument when a rule is broken (ElectionOptions' rules, as
  /// "GroupOptions.election.<field>", and max_leaders').
  void validate() const;
};

}  // namespace leader
