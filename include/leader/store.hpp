#pragma once
/// @file store.hpp
/// The interface every backend implements. A store holds no policy: no retry loops, no timers
/// beyond its own session keep-alive. Each call is one atomic state transition on the backend
/// (a compare-and-set), bounded by the given deadline.
///
/// Thread-safety: every method may be called concurrently from any thread (the electors, the
/// renewal scheduler and the user's threads all share one store).
///
/// Errors: contention is a value (`Acquired::lease` empty). Failures throw `BackendError` with a
/// code: unavailable (could not reach the store), deadline_exceeded (outcome unknown),
/// failed_precondition (misconfiguration), internal. Invalid names throw `InvalidArgument`.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader {

class LockWatcher;  // <leader/lock_watching.hpp>
class LockLister;   // <leader/lock_listing.hpp>
namespace detail {
class WaitsInLine;    // <leader/detail/capabilities.hpp>
class AsyncAttempts;  // <leader/detail/capabilities.hpp>
class CheckedStore;   // the validating wrapper of leader::open()
}  // namespace detail

/// Wall-clock time, used only for display and candidate bookkeeping, never for lease validity.
using WallTime = std::chrono::system_clock::time_point;

/// What the caller asks for in one acquisition attempt.
struct LeaseRequest {
  std::string lock;     ///< full, validated lock name (tenant prefix included)
  std::string owner{};  ///< random 128-bit owner token of this acquisition, 32 lower-case hex
  std::string node_id;  ///< who asks, e.g. "host:pid"; shown by inspect()
  Duration ttl{};       ///< server-side time to live of the lease
  int slots = 0;        ///< 0: a single lease; N >= 1: a group lease, one of N slots
  /// The caller will ask again with the same owner token and, once it stops asking without a
  /// grant, call leave_line() (leader/detail/capabilities.hpp: detail::WaitsInLine). A store
  /// whose recipe is a queue (ZooKeeper's sequential nodes) may then keep a contended attempt's
  /// place in line instead of withdrawing it: waiters of all processes are served in arrival
  /// order. Other stores ignore it. Set by electors with fair waiting (ElectionOptions::fair).
  bool wait_in_line = false;
};

/// A held lease. Stores fill every field; electors track local validity from `sent_at`.
struct [[nodiscard]] Lease {
  std::string lock{};
  std::string owner{};
  std::string node_id{};
  std::uint64_t fencing_token = 0;  ///< strictly increasing per lock across all acquisitions
  int slot = 0;                     ///< slot index in [0, slots) for group leases; 0 otherwise
  int slots = 0;                    ///< as requested
  Duration ttl{};                   ///< the ttl last granted by the server
  TimePoint sent_at{};  ///< local time when the granting acquire/renew was *sent* (set by electors)
};

/// Result of `try_acquire`: a lease, or empty on contention.
struct [[nodiscard]] Acquired {
  std::optional<Lease> lease{};
  [[nodiscard]] explicit operator bool() const { return lease.has_value(); }
};

/// Result of renew/release: `ok`, or `lost` when the lease is no longer ours (taken over or
/// expired). A stale owner's renew or release changes nothing on the backend.
enum class LeaseStatus { ok, lost };

/// Result of `renew`: `ok` with the ttl the server granted, or `lost`.
struct [[nodiscard]] Renewal {
  LeaseStatus status = LeaseStatus::lost;
  Duration ttl{};  ///< the ttl the server granted when `status == ok` (may be less than asked)
};

/// One lease of a `renew_batch` call: the lease and the ttl asked for it.
struct RenewalRequest {
  const Lease* lease = nullptr;  ///< not null; outlives the call
  Duration ttl{};
};

/// The outcome of one lease of a `renew_batch` call: what `renew` would have returned for it
/// alone, or the error it would have thrown (the outcome is then unknown, as after a renew that
/// threw: the renewal may still land).
struct [[nodiscard]] BatchRenewal {
  Renewal renewal{};                  ///< meaningful when `error` is empty
  std::optional<BackendError> error;  ///< set when this lease's outcome is unknown
};

/// One current holder of a lock, as seen by `inspect`.
struct Holder {
  std::string node_id{};
  std::string owner;  ///< owner token (never a secret)
  std::uint64_t fencing_token = 0;
  int slot = 0;
  Duration expires_in{};  ///< time left before server-side expiry, as the server saw it
};

/// A best-effort snapshot of a lock.
struct LockState {
  std::string lock{};
  std::vector<Holder> holders{};  ///< empty when free; ordered by slot
  [[nodiscard]] bool held() const { return !holders.empty(); }
};

/// A registered candidate of a strategic election.
struct Candidate {
  std::string node_id{};
  WallTime registered_at{};  ///< set by the store on first registration and kept afterwards
  std::uint64_t successes = 0;
  std::uint64_t failures = 0;
  std::optional<WallTime> last_completion{};
  std::map<std::string, std::string> metadata{};
};

/// What a store offers beyond the calls every store has: each entry is the object that
/// implements it (usually the store itself), or null when the store lacks it. Callers ask
/// LeaseStore::capabilities() instead of casting, so a wrapper never hides a capability.
struct Capabilities {
  LockWatcher* watch = nullptr;            ///< blocks until a lock changes (otherwise callers poll)
  LockLister* listing = nullptr;           ///< lists the held locks (`leader list`)
  detail::WaitsInLine* line = nullptr;     ///< keeps a waiter's place in line (FIFO grants)
  detail::AsyncAttempts* async = nullptr;  ///< attempts and waits on the store's own I/O thread
  /// No call waits for I/O, another process or a timer (in-process state under a short mutex):
  /// asynchronous doors may then call the store inline instead of on a pool thread.
  bool never_blocks = false;
  /// Set only by the validating wrapper of leader::open() (and only to itself): the engine then
  /// skips checking again what it built from validated parts.
  detail::CheckedStore* checked = nullptr;
};

/// The store interface. See the file comment for the thread-safety and error contract.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  /// The URI scheme of this store, e.g. "sqlite"; used in errors and metrics.
  [[nodiscard]] virtual std::string_view scheme() const = 0;

  /// One atomic attempt: grants the lease (a slot when `slots >= 1`) with a new fencing token, or
  /// reports contention. Stores may leave `Lease::sent_at`: electors set it from their own clock.
  virtual Acquired try_acquire(const LeaseRequest& request, Deadline deadline) = 0;

  /// Extends the lease to `ttl` from now (server time) only if `lease.owner` still holds it;
  /// on `ok` reports the ttl the server granted (electors track `sent_at` themselves).
  virtual Renewal renew(const Lease& lease, Duration ttl, Deadline deadline) = 0;

  /// Renews several leases at once, each exactly as `renew(*r.lease, r.ttl, deadline)` would, in
  /// as few round trips as the backend allows (a pipeline, one statement, one shared session).
  /// Result i belongs to `requests[i]` alone: a lease lost or failed in a batch never changes
  /// another's result. Each lease's server-side extension starts no earlier than this call.
  /// Throws (BackendError) only what `renew` throws before sending anything (then no lease was
  /// renewed); a failure after sending is reported per lease, as unknown outcomes. The default
  /// calls `renew` once per lease; leases left when `deadline` has passed get deadline_exceeded
  /// without being sent.
  [[nodiscard]] virtual std::vector<BatchRenewal> renew_batch(
      std::span<const RenewalRequest> requests, Deadline deadline);

  /// Frees the lease only if still owned; with `keep_for > 0` instead shortens it to expire
  /// `keep_for` from now (server time), so it stays held at least that long. Idempotent.
  virtual LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline) = 0;

  /// A snapshot of the lock's holders; never disturbs them.
  [[nodiscard]] virtual LockState inspect(std::string_view lock, Deadline deadline) = 0;

  /// Registers or refreshes a candidate of `group` for `ttl`. Keeps `registered_at` of an
  /// existing entry; stores the counters, last completion and metadata given.
  virtual void put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                             Deadline deadline) = 0;
  /// The unexpired candidates of `group`, in no particular order.
  [[nodiscard]] virtual std::vector<Candidate> list_candidates(std::string_view group,
                                                               Deadline deadline) = 0;
  /// Removes a candidate; removing an absent one is not an error.
  virtual void remove_candidate(std::string_view group, std::string_view node_id,
                                Deadline deadline) = 0;

  /// What this store offers beyond the calls above (none by default). A store that wraps
  /// another reports the wrapped store's (ForwardingStore does), replacing the entries it
  /// implements itself.
  [[nodiscard]] virtual Capabilities capabilities() noexcept { return {}; }
};

}  // namespace leader
