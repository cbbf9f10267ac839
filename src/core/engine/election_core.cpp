#include "election_core.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "acquire_loop.hpp"
#include "checked_store.hpp"
#include "held_lease.hpp"
#include "leader/blocking_pool.hpp"
#include "leader/detail/store_wrapper.hpp"
#include "leader/lock_watching.hpp"
#include "leader/uri.hpp"
#include "owner_token.hpp"
#include "renewal.hpp"
#include "wait_queue.hpp"

namespace leader::detail {
namespace {

// One object per thread reused by the calls that run on it (the acquire's request, the
// release's lease: their strings keep their buffers, so neither allocates), `busy` while a call
// uses it: a call nested on the same thread (from a listener or a store) builds its own.
template <class T>
struct Scratch {
  T value;
  bool busy = false;
};
thread_local Scratch<LeaseRequest> t_request;
thread_local Scratch<Lease> t_release;

// Marks `scratch` busy for as long as it lives; a no-op for null (the call built its own).
template <class T>
class ScratchUse {
 public:
  explicit ScratchUse(Scratch<T>* scratch) : scratch_(scratch) {
    if (scratch_ != nullptr) scratch_->busy = true;
  }
  ScratchUse(const ScratchUse&) = delete;
  ScratchUse& operator=(const ScratchUse&) = delete;
  ~ScratchUse() {
    if (scratch_ != nullptr) scratch_->busy = false;
  }

 private:
  Scratch<T>* scratch_;
};

template <class F>
void notify(ElectionListener* listener, F&& f) noexcept {
  if (!listener) return;
  try {
    f(*listener);
  } catch (...) {  // listener failures never disturb the election
  }
}

void publish(EventBus& bus, ElectionEvent e) noexcept {
  try {
    bus.publish(std::move(e));
  } catch (...) {  // events never disturb the election (allocation failure at worst)
  }
}

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

ElectionCore::ElectionCore(std::shared_ptr<LeaseStore> store, ElectionOptions options, int slots,
                           ElectorHooks hooks)
    : store_(std::move(store)),
      options_(std::move(options)),
      slots_(slots),
      hooks_(std::move(hooks)) {
  if (!store_) throw InvalidArgument("elector: the store is null (use leader::open(uri))");
  options_.validate();
  if (!hooks_.clock) hooks_.clock = Clock::system();
  call_timeout_ = options_.effective_call_timeout();
  checked_ = dynamic_cast<CheckedStore*>(store_.get());
  real_clock_ = hooks_.clock == Clock::system();
  never_blocks_ = options_.wait_time == Duration{0} && calls_never_block(*store_);
  line_ = find_capability<WaitsInLine>(*store_);
  async_ = find_capability<AsyncAttempts>(*store_);
  if (!hooks_.events) hooks_.events = std::make_shared<EventBus>();
  if (hooks_.history) history_ = attach_history(*hooks_.events, hooks_.history);
  rng_.seed(hooks_.seed != 0 ? hooks_.seed : std::random_device{}());
}

RenewalScheduler& ElectionCore::scheduler() {
  RenewalScheduler* s = scheduler_.load(std::memory_order_acquire);
  if (s == nullptr) {  // created on first use, lives until process exit
    s = &RenewalScheduler::for_clock(hooks_.clock);
    scheduler_.store(s, std::memory_order_release);
  }
  return *s;
}

Deadline ElectionCore::call_deadline(TimePoint sent) const {
  // On the real clock `sent` is a steady_clock reading taken just now: no second reading.
  return real_clock_ ? Deadline(saturating_add(sent, call_timeout_))
                     : Deadline::after(call_timeout_);
}

Acquisition ElectionCore::acquire(const std::string& lock, const std::stop_token& caller) {
  // One owner token per call, reused by every attempt: after an unknown outcome the store
  // recognises a lease the lost attempt got as ours, instead of contending with it.
  // This thread's request, reused (its strings keep their buffers: no allocation), unless an
  // acquire of this thread is under way further up the stack (a listener's): then its own.
  std::optional<LeaseRequest> own;
  const bool scratch = !t_request.busy;
  LeaseRequest& request = scratch ? t_request.value : own.emplace();
  const ScratchUse<LeaseRequest> use(scratch ? &t_request : nullptr);
  request.lock.assign(lock);
  request.owner.resize(kOwnerTokenLength);
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
  } leave(request.wait_in_line ? line_ : nullptr, request, options_.effective_call_timeout());
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
    LockWatcher* watcher = ticket && real_clock_ ? lock_watcher(*store_) : nullptr;
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
      watcher = real_clock_ ? lock_watcher(*store_) : nullptr;
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

Acquisition ElectionCore::end_without_grant(const std::string& lock, const LeaseRequest& request,
                                            const AcquireLoop& loop, AcquireLoop::End end,
                                            const BackendError* failure, bool ghost_aside) {
  if (loop.unknown()) {
    if (ghost_aside) {  // off the store's I/O thread: two blocking store calls
      BlockingPool::shared().post(
          [core = shared_from_this(), request] { core->release_ghost(request); });
    } else {
      release_ghost(request);
    }
  }
  if (end == AcquireLoop::End::failed) return on_backend_error(lock, *failure);
  if (end == AcquireLoop::End::wait_over && loop.last_error())
    return on_backend_error(lock, *loop.last_error());
  Skipped s = end == AcquireLoop::End::cancelled
                  ? Skipped{SkipReason::cancelled, "cancelled while waiting for the lease"}
                  : Skipped{SkipReason::contention, "another owner holds '" + lock + "'"};
  report_skip(lock, s);
  return {std::nullopt, s};
}

// acquire() as a chain of callbacks on the store's I/O thread (AsyncAttempts): the same rules
// (AcquireLoop: one owner token, the backoff, the wait, how a call without a grant ends), the same
// checks (the CheckedStore's asynchronous attempts) and the same hold(); the pauses are the
// store's waits for the lock's next change, so nothing here holds a thread.
class AsyncAcquisition : public std::enable_shared_from_this<AsyncAcquisition> {
 public:
  AsyncAcquisition(std::shared_ptr<ElectionCore> core, std::string lock, std::stop_token stop,
                   ElectionCore::AcquireDone done)
      : core_(std::move(core)),
        store_(*core_->async_),
        lock_(std::move(lock)),
        request_{lock_, new_owner_token(), core_->options_.node_id, core_->options_.lease_time,
                 core_->slots_},
        stop_(std::move(stop)),
        done_(std::move(done)),
        order_(next_order()),
        loop_(core_->hooks_.clock->now(), core_->options_.wait_time) {}

  void start() { attempt(core_->hooks_.clock->now()); }

 private:
  using End = AcquireLoop::End;
  // Ends the wait of a stop request: cancels the store's wait, whose woken() then sees the stop.
  struct CancelWait {
    AsyncAttempts* store;
    std::uint64_t id;
    void operator()() const noexcept { store->cancel_wait(id); }
  };

  static std::uint64_t next_order() {
    static std::atomic<std::uint64_t> arrivals{0};
    return arrivals.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  void attempt(TimePoint sent) {
    sent_ = sent;
    std::exception_ptr error;  // delivered outside the handler (see deliver())
    try {
      store_.try_acquire_async(
          request_, core_->call_deadline(sent),
          [self = shared_from_this()](AsyncAttempts::Attempt a) { self->attempted(std::move(a)); });
    } catch (...) {  // not sent (the store is closing, no descriptor left): this call's error
      error = std::current_exception();
    }
    if (error) fail(std::move(error));
  }

  void attempted(AsyncAttempts::Attempt a) {
    Clock& clock = *core_->hooks_.clock;
    if (!a.error && core_->checked_ == nullptr) {  // the CheckedStore checks its own attempts
      try {
        check_grant_owner(core_->store_->scheme(), request_, a.acquired);
      } catch (...) {
        a = {{}, std::current_exception(), a.seen};
      }
    }
    if (a.error) {
      std::optional<BackendError> backend;
      std::exception_ptr other;
      try {
        std::rethrow_exception(a.error);
      } catch (const BackendError& e) {
        backend = e;
      } catch (...) {
        other = std::current_exception();
      }
      if (other) return fail(std::move(other));
      if (loop_.failed(*backend) == End::failed) return end(End::failed, &*backend);
    } else if (a.acquired) {
      const TimePoint replied = core_->options_.min_lease_time > Duration{0} ? clock.now() : sent_;
      return settle([&] {
        auto held = core_->hold(lock_, *a.acquired.lease, {sent_, replied}, stop_, loop_.unknown());
        return Acquisition{LeaseGuard(std::move(held)), {}};
      });
    } else {
      loop_.contended();
    }
    const TimePoint now = clock.now();
    if (const End e = loop_.after_attempt(now, stop_.stop_requested()); e != End::go_on)
      return end(e);
    const Duration pause = loop_.pause(now, core_->jittered(loop_.backoff()));
    std::unique_lock lock(mu_);  // woken() waits until the stop callback is in place
    std::uint64_t id = 0;
    std::exception_ptr error;
    try {
      id = store_.wait_change(lock_, a.seen, Deadline(saturating_add(now, pause)),
                              Deadline(loop_.wait_until()), order_,
                              [self = shared_from_this()](bool changed) { self->woken(changed); });
    } catch (...) {
      error = std::current_exception();
    }
    if (!error) {
      on_stop_.emplace(stop_, CancelWait{&store_, id});
      return;
    }
    lock.unlock();
    fail(std::move(error));
  }

  void woken(bool changed) {
    {
      std::lock_guard lock(mu_);
      on_stop_.reset();
    }
    loop_.woken(changed);
    if (stop_.stop_requested()) return end(End::cancelled);
    attempt(core_->hooks_.clock->now());  // also at the wait's end: a skip is the store's answer
  }

  // The call ends without a grant (ElectionCore::end_without_grant, the ghost released aside).
  void end(End why, const BackendError* failure = nullptr) {
    settle([&] { return core_->end_without_grant(lock_, request_, loop_, why, failure, true); });
  }

  // The call ends with an error that is not a store's answer (nothing sent, a stray exception).
  void fail(std::exception_ptr error) {
    if (loop_.unknown())
      BlockingPool::shared().post(
          [core = core_, request = request_] { core->release_ghost(request); });
    deliver({}, std::move(error));
  }

  template <class F>
  void settle(F&& make) {
    std::optional<Acquisition> acq;
    std::exception_ptr error;
    try {
      acq.emplace(make());
    } catch (...) {
      error = std::current_exception();
    }
    if (error) return deliver({}, std::move(error));
    deliver(std::move(*acq), nullptr);
  }

  // Never called inside an exception handler: the caller's thread may be done with the
  // exception before this one leaves the handler, and the last reference then drops here with
  // no ordering a race detector can see (libstdc++ counts exception references uninstrumented).
  void deliver(Acquisition acq, std::exception_ptr error) {
    ElectionCore::AcquireDone done = std::move(done_);
    done(std::move(acq), std::move(error));
  }

  std::shared_ptr<ElectionCore> core_;
  AsyncAttempts& store_;
  std::string lock_;
  LeaseRequest request_;
  std::stop_token stop_;
  ElectionCore::AcquireDone done_;
  const std::uint64_t order_;  // this acquisition's arrival: earlier waiters are woken first
  AcquireLoop loop_;
  TimePoint sent_{};
  std::mutex mu_;
  std::optional<std::stop_callback<CancelWait>> on_stop_;
};

bool ElectionCore::acquires_async() const noexcept {
  return async_ != nullptr && real_clock_ && !turns_.check && async_->attempts_async();
}

void ElectionCore::acquire_async(std::string lock, std::stop_token caller, AcquireDone done) {
  if (!acquires_async())
    throw InvalidArgument("acquire_async: the store '" + std::string(store_->scheme()) +
                          "' does not attempt asynchronously here (see acquires_async())");
  std::make_shared<AsyncAcquisition>(shared_from_this(), std::move(lock), std::move(caller),
                                     std::move(done))
      ->start();
}

void ElectionCore::release_ghost(const LeaseRequest& request) noexcept {
  // Best effort, within one call timeout: find the slot and fencing token (some stores need
  // them) of a lease our owner token holds, and release it. A lost attempt that is still on its
  // way and lands after this leaves a lease that expires after its ttl.
  const Deadline deadline = Deadline::after(options_.effective_call_timeout());
  try {
    for (const Holder& h : store_->inspect(request.lock, deadline).holders) {
      if (h.owner != request.owner) continue;
      Lease ghost{request.lock, request.owner, request.node_id, h.fencing_token,
                  h.slot,       request.slots, request.ttl,     {}};
      (void)store_->release(ghost, Duration{0}, deadline);
    }
  } catch (...) {
  }
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

Duration ElectionCore::jittered(Duration backoff) {
  std::uniform_int_distribution<Duration::rep> jitter(backoff.count() / 2, backoff.count());
  std::lock_guard lock(rng_mu_);
  return Duration(jitter(rng_));
}

Acquisition ElectionCore::on_backend_error(const std::string& lock, const BackendError& e) {
  publish(*hooks_.events, {.kind = EventKind::backend_error,
                           .lock = lock,
                           .error_code = e.code(),
                           .detail = sanitize_error_text(e.what())});
  switch (options_.on_backend_error) {
    case OnBackendError::rethrow:
      throw e;
    case OnBackendError::skip: {
      Skipped s{SkipReason::backend_error, e.what()};
      report_skip(lock, s);
      return {std::nullopt, s};
    }
    case OnBackendError::fail_open: {
      auto held = std::make_shared<HeldLease>(shared_from_this());
      held->listener = hooks_.listener.get();
      held->fail_open = true;
      held->started = std::chrono::system_clock::now();
      const TimePoint now = hooks_.clock->now();
      held->clock_.never_expire();
      held->info = LeaseInfo{.lock = lock,
                             .node_id = options_.node_id,
                             .lease_time = options_.lease_time,
                             .acquired_at = now,
                             .fail_open = true};
      notify(hooks_.listener.get(), [&](ElectionListener& l) { l.on_elected(held->info); });
      held->publish(EventKind::elected);
      return {LeaseGuard(held), {}};
    }
  }
  throw e;
}

void ElectionCore::report_skip(const std::string& lock, const Skipped& skipped) noexcept {
  notify(hooks_.listener.get(), [&](ElectionListener& l) { l.on_skipped(lock, skipped); });
  publish(*hooks_.events, {.kind = EventKind::skipped,
                           .lock = lock,
                           .skip_reason = skipped.reason,
                           .detail = skipped.detail});
}

void ElectionCore::finish(HeldLease& held, bool failed, const std::string& error,
                          bool on_store) noexcept {
  std::optional<Lease> own;  // when this thread's scratch lease is in use
  const bool release = !held.fail_open && on_store;
  Lease* lease = release && !t_release.busy ? &t_release.value : nullptr;
  const ScratchUse<Lease> use(lease != nullptr ? &t_release : nullptr);
  {
    // One lock for everything the end reads and sets before the store call.
    std::unique_lock lock(held.mu);
    if (held.released) return;
    held.released = true;
    if (!held.fail_open) {
      held.finished = true;
      // A renewal still queued sees `finished` and does nothing; only a running one is waited for.
      held.cv().wait(lock, [&] { return !held.calling; });
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
}

bool is_cancellation(const std::exception_ptr& e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const OperationCancelled&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace leader::detail
