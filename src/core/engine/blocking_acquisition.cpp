// ElectionCore::acquire: the blocking driver. Attempts, pauses, fair waiting in this process's
// queue (wait_queue.hpp) and in the store's line (WaitsInLine), the head waiter's watch.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>

#include "acquire_loop.hpp"
#include "checked_store.hpp"
#include "election_core.hpp"
#include "held_lease.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/lock_watching.hpp"
#include "owner_token.hpp"
#include "scratch.hpp"
#include "wait_queue.hpp"

namespace leader::detail {
namespace {

thread_local Scratch<LeaseRequest> t_request;

// Sleeps up to `d` on `clock`, returning early when `stop` is requested.
void interruptible_sleep(Clock& clock, Duration d, const std::stop_token& stop) {
  std::mutex mu;
  std::condition_variable cv;
  std::stop_callback wake(stop, [&] {
    std::lock_guard lock(mu);
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  TimePoint until = clock.now() + d;
  while (!stop.stop_requested() && clock.now() < until) clock.wait_until(lock, cv, until);
}

// Sleeps (real time) until `until` or a stop.
void pause_until(std::chrono::steady_clock::time_point until, const std::stop_token& stop) {
  interruptible_sleep(
      *Clock::system(),
      std::chrono::duration_cast<Duration>(until - std::chrono::steady_clock::now()), stop);
}

// The head waiter of a store that can watch (lock_watching.hpp): blocks up to `window` (real
// time) until the lock's holders change, so a release by another process is seen in one
// notification instead of at the next poll. The stores' watches also read again at a holder's
// expiry (which publishes nothing), and the caller asks the store again after each window. True
// when a change was seen; false after `window` or a stop; after an error of the watch it sleeps
// `pause` (at most the window) and returns false: the next attempt reports the store's state.
bool watch_for_change(LockWatcher& watcher, const std::string& lock, int slots, Duration window,
                      Duration pause, const std::stop_token& stop) {
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + window;
  try {
    // First the current holders (a watch against a snapshot no lock can be in answers at once:
    // an empty one would wait while the lock is free), then a watch until they differ.
    const LockState never{lock, {Holder{.node_id = "", .owner = "-", .fencing_token = 0}}};
    const LockState seen = watcher.watch(lock, never, Deadline(until), stop);
    if (seen.holders.size() < static_cast<std::size_t>(std::max(slots, 1))) return true;
    const LockState now = watcher.watch(lock, seen, Deadline(until), stop);
    if (stop.stop_requested()) return false;
    return !same_holders(now, seen);
  } catch (const Error&) {
    pause_until(std::min(until, start + pause), stop);
    return false;
  }
}

// A head waiter with a place in the store's line (WaitsInLine): waits for the waiter just ahead
// of it to leave, so a hand-over wakes only the next in line; nullopt when it holds no place
// (then it watches the lock). After an error it sleeps `pause` (at most the window): the next
// attempt reports the store's state.
std::optional<bool> wait_turn(WaitsInLine& line, const LeaseRequest& request, Duration window,
                              Duration pause, const std::stop_token& stop) {
  const auto start = std::chrono::steady_clock::now();
  try {
    return line.wait_turn(request, Deadline(start + window), stop);
  } catch (const Error&) {
    pause_until(start + std::min(window, pause), stop);
    return false;
  }
}

// How long a head waiter watches before it asks the store again: the longest backoff, or what is
// left of its wait.
Duration window_until(const Clock& clock, TimePoint wait_until) {
  return std::clamp(std::chrono::duration_cast<Duration>(wait_until - clock.now()), Duration{0},
                    kMaxBackoff);
}

}  // namespace

Acquisition ElectionCore::acquire(const std::string& lock, const std::stop_token& caller) {
  // One owner token per call, reused by every attempt: after an unknown outcome the store
  // recognises a lease the lost attempt got as ours, instead of contending with it.
  // This thread's request, reused (its strings keep their buffers: no allocation), unless an
  // acquire of this thread is under way further up the stack (a listener's): then its own.
  std::optional<LeaseRequest> own;
  Scratch<LeaseRequest>& mine = t_request;  // one TLS access (each access calls its init wrapper)
  const bool scratch = !mine.busy;
  LeaseRequest& request = scratch ? mine.value : own.emplace();
  const ScratchUse<LeaseRequest> use(scratch ? &mine : nullptr);
  request.lock.assign(lock);
  if (request.owner.size() != kOwnerTokenLength) request.owner.resize(kOwnerTokenLength);
  write_owner_token(request.owner.data());
  request.node_id.assign(options_.node_id);
  request.ttl = options_.lease_time;
  request.slots = slots_;
  // Fair waiting on a store that queues (ZooKeeper): the attempts keep their place in the
  // store's line, FIFO across processes; every way out without a grant gives it up.
  const bool fair = options_.fair && options_.wait_time > Duration{0};
  request.wait_in_line = fair && line_ != nullptr && slots_ == 0;
  class LeaveLine {
   public:
    LeaveLine(WaitsInLine* line, const LeaseRequest& request, Duration timeout)
        : line_(line), request_(request), timeout_(timeout) {}
    LeaveLine(const LeaveLine&) = delete;
    LeaveLine& operator=(const LeaveLine&) = delete;
    LeaveLine(LeaveLine&&) = delete;
    LeaveLine& operator=(LeaveLine&&) = delete;
    ~LeaveLine() {
      if (line_ != nullptr && !granted_) line_->leave_line(request_, Deadline::after(timeout_));
    }
    void granted() { granted_ = true; }

   private:
    WaitsInLine* line_;
    const LeaseRequest& request_;
    Duration timeout_;
    bool granted_ = false;
  } leave(request.wait_in_line ? line_ : nullptr, request, call_timeout_);
  if (turns_.check) {
    std::optional<Skipped> not_mine;
    try {
      not_mine = turns_.check(lock);
    } catch (const BackendError& e) {
      return on_backend_error(lock, e);
    }
    if (not_mine) {
      report_skip(lock, *not_mine);
      return {std::nullopt, *not_mine};
    }
  }
  Clock& clock = *hooks_.clock;
  // The wait starts now; this reading is also the first attempt's send time.
  TimePoint next_sent = clock.now();
  AcquireLoop loop(next_sent, options_.wait_time);
  const TimePoint wait_until = loop.wait_until();
  // Fair waiting (wait_queue.hpp): a caller that may wait queues behind this process's earlier
  // waiters for the same lock of the same store: FIFO within the process, woken at once by its
  // releases. It takes its ticket before the first attempt only when others already queue (one
  // atomic load when nobody does), otherwise after its first attempt failed: an uncontended
  // acquisition never touches the queue.
  std::optional<WaitTicket> ticket;
  if (fair && WaitTicket::queued(store_.get(), lock)) ticket.emplace(store_.get(), lock);

  while (true) {
    if (caller.stop_requested())
      return end_without_grant(lock, request, loop, AcquireLoop::End::cancelled);
    LockWatcher* watcher = ticket && real_clock_ ? watcher_ : nullptr;
    if (ticket && !ticket->head()) {
      // Behind another waiter of this process: sleep until it is served or gives up (then try at
      // once: a slot may be free), or until the wait ends (then ask the store once more, so a
      // skip is always the store's answer).
      ticket->wait(clock, wait_until, caller);
      if (caller.stop_requested()) continue;
      next_sent = clock.now();
      loop.woken(true);
    }
    // Waiters of this process hold every slot: their release wakes this one (no store call).
    if (ticket && ticket->wait_while_held_here(clock, wait_until, caller, slots_)) {
      if (caller.stop_requested()) continue;
      next_sent = clock.now();
    }
    if (ticket) ticket->before_attempt();
    const TimePoint sent = next_sent;
    Acquired got;
    try {
      // The request is built from validated parts (a lock name Elector::scoped checked, a
      // token of write_owner_token, the validated options): the CheckedStore skips its checks.
      got = checked_ != nullptr
                ? checked_->try_acquire_built(request, call_deadline(sent),
                                              real_clock_ ? sent : std::chrono::steady_clock::now())
                : store_->try_acquire(request, call_deadline(sent));
      if (checked_ == nullptr) check_grant_owner(store_->scheme(), request, got);
      loop.contended();
    } catch (const BackendError& e) {
      if (loop.failed(e) == AcquireLoop::End::failed)
        return end_without_grant(lock, request, loop, AcquireLoop::End::failed, &e);
    }
    if (got) {
      leave.granted();  // the place in line, if any, became this lease
      // The reply's time matters only to min_lease_time (counted from it); without one the
      // release's keep_for is 0 whatever it is, so `sent` stands in (no clock reading).
      const TimePoint replied = options_.min_lease_time > Duration{0} ? clock.now() : sent;
      // A grant too short for the margin throws GrantTooShort (released): not a store error.
      auto held = hold(lock, *got.lease, {sent, replied}, caller, loop.unknown());
      if (ticket) held->local_hold = ticket->mark_held();
      return {LeaseGuard(std::move(held)), {}};
    }
    const TimePoint now = clock.now();
    // A stop is seen at the top of the loop (also one that came during the pause).
    if (loop.after_attempt(now, false) == AcquireLoop::End::wait_over) break;
    if (fair && !ticket) {
      ticket.emplace(store_.get(), lock);
      watcher = real_clock_ ? watcher_ : nullptr;
      // Only this process's head keeps a place in the store's line: a place of a waiter queued
      // behind another one here would stand in the line ahead of that head, which waits for it,
      // while it waits for the head (it asks again once it is the head, at the line's end).
      if (request.wait_in_line && !ticket->head())
        line_->leave_line(request, Deadline::after(options_.effective_call_timeout()));
    }
    const Duration pause = loop.pause(now, jittered(loop.backoff()));
    // Woken to try again at once: the store reported a change of holder (the head of a store
    // that can watch), or this process released the lock or made this waiter the head.
    // A head with a place in the store's line waits for the one ahead of it instead.
    std::optional<bool> turn;
    if (watcher != nullptr && request.wait_in_line && ticket->head())
      turn = wait_turn(*line_, request, window_until(clock, wait_until), pause, caller);
    const bool woken =
        turn ? *turn
        : watcher != nullptr
            ? ticket->head() && watch_for_change(*watcher, lock, slots_,
                                                 window_until(clock, wait_until), pause, caller)
            : ticket && ticket->wait(clock, now + pause, caller);
    if (!woken) {
      if (watcher != nullptr && !ticket->head()) {
        ticket->wait(clock, now + pause, caller);  // the head watches; this one waits its turn
      } else if (!ticket) {
        interruptible_sleep(clock, pause, caller);
      }
    }
    loop.woken(woken);
    next_sent = clock.now();
  }
  return end_without_grant(lock, request, loop, AcquireLoop::End::wait_over);
}

}  // namespace leader::detail
