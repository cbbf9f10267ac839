#pragma once
// Internal: the shared state of one held lease, seen by the guard, the context and the renewal
// scheduler. Its deadline and renewal times are its LeaseClock's (lease_clock.hpp: the deadline
// rule); store renew calls of one lease are serialised (`renewal`, renew_slot.hpp).

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "election_core.hpp"
#include "events/lease_publishing.hpp"
#include "lease_clock.hpp"
#include "renew_slot.hpp"
#include "wait_queue.hpp"

namespace leader::detail {

struct HeldLease {
  /// `core`: the elector this lease belongs to. It outlives the lease through this pointer and
  /// owns everything every lease of the elector shares (store, clock, bus, options): one
  /// pointer here instead of a copy of each.
  explicit HeldLease(std::shared_ptr<ElectionCore> owner) : core(std::move(owner)) {}

  std::shared_ptr<ElectionCore> core;    // never null
  ElectionListener* listener = nullptr;  // the elector's synchronous listener (owned by `core`)
  [[nodiscard]] const ElectionOptions& options() const { return core->options(); }
  [[nodiscard]] const std::shared_ptr<LeaseStore>& store() const { return core->store(); }
  [[nodiscard]] Clock& clock() const { return *core->clock(); }
  [[nodiscard]] EventBus& bus() const { return *core->events(); }

  /// The lease as the store knows it (lock and node id from `info`, the rest from `lease`), for
  /// a store call. Call with `mu` held.
  /// store_lease_locked() into `out`, whose strings keep their buffers (no allocation when it
  /// held a lease before). Call with `mu` held.
  void store_lease_into_locked(Lease& out) const {
    out.lock.assign(info.lock);
    out.owner.assign(owner_token_locked());
    out.node_id.assign(info.node_id);
    out.fencing_token = lease.fencing_token;
    out.slot = lease.slot;
    out.slots = lease.slots;
    out.ttl = clock_.granted_ttl();
    out.sent_at = clock_.sent_at();
  }
  [[nodiscard]] Lease store_lease_locked() const {
    return Lease{info.lock,
                 std::string(owner_token_locked()),
                 info.node_id,
                 lease.fencing_token,
                 lease.slot,
                 lease.slots,
                 clock_.granted_ttl(),
                 clock_.sent_at()};
  }
  /// What a held lease keeps of the store's `Lease` (its lock name and node id are in `info`, its
  /// granted ttl and send time in `clock_`).
  struct Grant {
    /// The owner token: 32 hex characters (CheckedStore checks every token), kept in place
    /// instead of a heap string (48 bytes less per lease).
    std::array<char, 32> owner{};
    std::uint64_t fencing_token = 0;
    int slot = 0;
    int slots = 0;
  };

  LeaseInfo info;  // the lock name and node id are kept here only (`lease` leaves them empty)
  TimePoint replied_at{};  // when the acquire's reply came: min_lease_time counts from here
  /// Fires the action's stop_token (idempotent): lost, about to expire, or the caller cancelled.
  void request_stop() noexcept;
  /// True once request_stop() ran.
  [[nodiscard]] bool stop_requested() const noexcept {
    return stop_wanted.load(std::memory_order_acquire);
  }
  /// The action's stop_token; its source is made on the first call (already stopped if a stop
  /// came first): an action that never asks costs no allocation.
  [[nodiscard]] std::stop_token stop_token();
  /// Forwards the caller's stop request (a function object of one pointer, not a std::function:
  /// 40 bytes less per lease).
  struct StopRelay {
    HeldLease* self;
    void operator()() const noexcept { self->request_stop(); }
  };
  /// Only when the caller's token can be stopped at all (run_if_leader's default token cannot):
  /// 64 bytes less per lease otherwise.
  std::unique_ptr<std::stop_callback<StopRelay>> caller_link;
  WallTime started{};  // when the lease was granted (system clock), for events and history
  /// Counts this lease among the holders of its lock in this process's wait queue (taken by a
  /// waiter: wait_queue.hpp) until the store release; reset after it.
  LocalHold local_hold;

  /// Where the bus keeps this lease's lock state (lease_publishing.hpp).
  mutable BusSlot bus_slot{nullptr};
  std::mutex mu;
  std::optional<std::stop_source> stop_source;  // guarded by mu: made by stop_token()
  std::atomic<bool> stop_wanted{false};         // written under mu: request_stop() ran
  /// Guarded by mu: `lease` holds a grant (its owner token is set). Here rather than in `lease`,
  /// where its padding would cost 8 bytes per lease.
  bool has_owner = false;
  /// The owner token of `lease` (empty before the first grant). Call with `mu` held.
  [[nodiscard]] std::string_view owner_token_locked() const {
    return has_owner ? std::string_view(lease.owner.data(), lease.owner.size())
                     : std::string_view();
  }
  /// Notified when `renewal` or `lost` change: one of a few condition variables
  /// shared by all held leases (waits on it are rare: an extend() behind a renewal, an unwatch()
  /// behind a store call), 48 bytes less per lease; `_any` because leases sharing one wait with
  /// their own mutexes. A waiter re-checks its predicate, so another lease's notify is harmless.
  [[nodiscard]] std::condition_variable_any& cv() const;
  /// Guarded by mu: the identity of the confirmed grant (store_lease_locked() for a store call).
  Grant lease;
  /// Guarded by mu: the deadline, the renewal times and what renewals request (lease_time, then
  /// extend's).
  LeaseClock clock_;
  RenewSlot renewal;                 // guarded by mu: one renew call at a time (renew_slot.hpp)
  bool lost = false;                 // guarded by mu
  bool finished = false;             // guarded by mu
  bool released = false;             // guarded by mu: finish() ran
  bool fail_open = false;            // set before the lease is shared, then constant
  std::optional<LeaseOutcome> loss;  // guarded by mu: how the lease ended (lost: set at once)
  std::unique_ptr<std::string> loss_reason;  // guarded by mu: why it was lost (set once, rarely)

  /// The scheduler's queue (renewal.cpp): one entry per watched lease, by due time.
  using ScheduleKey = std::pair<TimePoint, std::uint64_t>;
  using ScheduleQueue = std::map<ScheduleKey, std::weak_ptr<HeldLease>>;
  /// This lease's entry in that queue, guarded by the scheduler's own mutex: re-keyed in place
  /// (node extract and insert) on every reschedule, no search and no allocation.
  std::optional<ScheduleQueue::iterator> scheduled;

  /// The elector's safety margin rule (its options).
  [[nodiscard]] MarginRule margin_rule() const {
    return {options().safety_margin, options().auto_extend};
  }
  /// Records the acquire's grant of a request for `asked` sent at `sent`: its identity (owner
  /// token, fencing token, slot) and its times (LeaseClock::confirm).
  void confirm_locked(TimePoint sent, Duration asked, const Lease& granted_lease);
  /// Ends a renew call (scheduled or extend): applies its outcome (nullopt = unknown)
  /// and wakes whoever waits for the renew slot. Call without `mu` held. Returns why a confirmed
  /// grant is unsafe (margin_misfit), empty otherwise.
  /// With `renewed_out`, a `renewed` event is not published but reported there (true: the caller
  /// publishes it, with publish_renewed()).
  std::string end_renewal(TimePoint sent, Duration asked, std::optional<Renewal> outcome,
                          bool* renewed_out = nullptr);
  /// Marks the lease lost once: fires the stop_token, emits on_lost and a `lost` event. Call
  /// without `mu` held.
  void mark_lost(const std::string& reason, LeaseOutcome outcome = LeaseOutcome::lost) noexcept;
  /// Publishes an event of `kind` about this lease (lease, started and deadline filled in).
  void publish(EventKind kind, std::string detail = {},
               std::optional<ErrorCode> code = std::nullopt) noexcept;
  /// publish() with the lease's deadline and outcome as the caller read them (under `mu`, or
  /// before the lease was shared): no lock of `mu` here.
  void publish_read(EventKind kind, TimePoint deadline, std::optional<LeaseOutcome> outcome,
                    std::string detail = {}) noexcept;
  /// Publishes `renewed` for each of `leases` not ended meanwhile, one bus call per run of
  /// leases sharing a bus (a renewal batch: one lock of the bus instead of one per lease).
  static void publish_renewed(std::span<const std::shared_ptr<HeldLease>> leases) noexcept;
};

}  // namespace leader::detail
