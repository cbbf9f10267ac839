// ElectionCore::hold and finish: a granted lease held (watched, events emitted), and its end
// (release, keeping min_lease_time; events; the waiters of this process woken).

#include <algorithm>
#include <optional>

#include "checked_store.hpp"
#include "election_core.hpp"
#include "held_lease.hpp"
#include "leader/history.hpp"
#include "leader/uri.hpp"
#include "renewal.hpp"
#include "scratch.hpp"
#include "wait_queue.hpp"

namespace leader::detail {
namespace {

thread_local Scratch<Lease> t_release;

}  // namespace

void HeldLease::mark_lost(const std::string& reason, LeaseOutcome outcome) noexcept {
  {
    std::lock_guard lock(mu);
    if (lost) return;
    lost = true;
    loss = outcome;
    loss_reason = std::make_unique<std::string>(reason);
  }
  cv().notify_all();
  request_stop();
  notify(listener, [&](ElectionListener& l) { l.on_lost(info, reason); });
  publish(EventKind::lost, reason);
}

std::shared_ptr<HeldLease> ElectionCore::hold(const std::string& lock, const Lease& granted,
                                              Exchange acquire, const std::stop_token& caller,
                                              bool unknown_before) {
  const TimePoint sent = acquire.sent;
  auto held = std::make_shared<HeldLease>(shared_from_this());
  held->listener = hooks_.listener.get();
  held->clock_.request(options_.lease_time);
  held->replied_at = acquire.replied;
  // A lost attempt of this call may still land and reset the lease to lease_time from then.
  if (unknown_before) held->clock_.unknown_before(options_.lease_time);
  held->confirm_locked(sent, options_.lease_time, granted);
  const Duration granted_ttl = LeaseClock::granted(options_.lease_time, granted.ttl);
  if (auto misfit = held->margin_rule().misfit(granted_ttl); !misfit.empty()) {
    try {  // nothing ran under it yet: free it for the others at once
      (void)store_->release(granted, Duration{0},
                            Deadline::after(options_.effective_call_timeout()));
    } catch (...) {  // it then expires on the server after the granted ttl
    }
    throw GrantTooShort(std::string(store_->scheme()),
                        "lock '" + lock + "': the store granted a ttl of " +
                            format_duration(granted_ttl) + " where " +
                            format_duration(options_.lease_time) + " was asked; " + misfit +
                            "; the lease was released (use a longer lease on the store, or a "
                            "shorter safety_margin)");
  }
  held->info = LeaseInfo{.lock = lock,
                         .node_id = options_.node_id,
                         .fencing_token = granted.fencing_token,
                         .slot = granted.slot,
                         .lease_time = options_.lease_time,
                         .acquired_at = sent,
                         .fail_open = false,
                         .granted_ttl = granted_ttl};
  held->started = std::chrono::system_clock::now();
  if (caller.stop_possible())
    held->caller_link = std::make_unique<std::stop_callback<HeldLease::StopRelay>>(
        caller, HeldLease::StopRelay{held.get()});
  notify(hooks_.listener.get(), [&](ElectionListener& l) { l.on_elected(held->info); });
  // Not shared yet (the scheduler watches it next): its deadline is read without `mu`.
  held->publish_read(EventKind::elected, held->clock_.deadline(), std::nullopt);
  scheduler().watch(held);
  return held;
}

std::exception_ptr ElectionCore::finish(HeldLease& held, bool failed, const std::string& error,
                                        bool on_store) noexcept {
  std::exception_ptr release_failure;
  std::optional<Lease> own;  // when this thread's scratch lease is in use
  const bool release = !held.fail_open && on_store;
  Scratch<Lease>& mine = t_release;  // one TLS access
  Lease* lease = release && !mine.busy ? &mine.value : nullptr;
  const ScratchUse<Lease> use(lease != nullptr ? &mine : nullptr);
  {
    // One lock for everything the end reads and sets before the store call.
    std::unique_lock lock(held.mu);
    if (held.released) return nullptr;
    held.released = true;
    if (!held.fail_open) {
      held.finished = true;
      // A renewal still queued sees `finished` and does nothing; only a running one is waited for.
      held.cv().wait(lock, [&] { return !held.renewal.calling(); });
    }
    if (release) {
      try {
        if (lease == nullptr) lease = &own.emplace();
        held.store_lease_into_locked(*lease);
      } catch (...) {  // allocation failure: the lease then expires on the server after its ttl
        lease = nullptr;
      }
    }
  }
  if (!held.fail_open) scheduler().unwatch(held);
  if (release) {
    // Counted from the acquire's reply: the server granted before it, so the lease stays held
    // at least min_lease_time after the grant (see ElectionOptions::min_lease_time). Without a
    // min_lease_time it is 0 whenever the release goes out (no clock reading).
    Duration keep_for{0};
    if (options_.min_lease_time > Duration{0}) {
      const TimePoint now = hooks_.clock->now();
      keep_for = std::max(Duration{0},
                          std::chrono::duration_cast<Duration>(
                              saturating_add(held.replied_at, options_.min_lease_time) - now));
    }
    if (lease != nullptr) {
      try {
        const Deadline deadline = Deadline::after(call_timeout_);
        (void)(checked_ != nullptr ? checked_->release_held(*lease, keep_for, deadline)
                                   : store_->release(*lease, keep_for, deadline));
      } catch (...) {  // the lease then expires on the server after its ttl
        release_failure = std::current_exception();
      }
    }
    held.local_hold.reset();  // wakes the waiters of this process queued for the lock
    if (keep_for == Duration{0}) notify_released(store_.get(), held.info.lock);
  }
  held.caller_link.reset();
  std::string detail = failed ? error : std::string();
  TimePoint deadline;
  std::optional<LeaseOutcome> outcome;
  {
    std::lock_guard lock(held.mu);
    if (held.loss) {  // lost first: that is how it ended, whatever the action did next
      detail = (held.loss_reason ? *held.loss_reason : std::string("lost")) +
               (failed ? "; the action then failed: " + error : "");
    } else {
      held.loss = failed ? LeaseOutcome::failed : LeaseOutcome::completed;
    }
    deadline = held.clock_.deadline();
    outcome = held.loss;
  }
  notify(hooks_.listener.get(), [&](ElectionListener& l) { l.on_revoked(held.info); });
  held.publish_read(EventKind::released, deadline, outcome,
                    detail.empty() ? std::string() : sanitize_error_text(detail));
  if (turns_.record && !held.fail_open) {
    try {
      turns_.record(outcome == LeaseOutcome::completed);
    } catch (...) {  // the counts are re-sent with the next registration
    }
  }
  return release_failure;
}

}  // namespace leader::detail
