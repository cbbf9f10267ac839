#pragma once
// Internal: the election engine every elector drives (one per elector, shared by its copies and
// by the leases it holds). The public surface is leader::Elector (leader/elector.hpp).

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <string>

#include "acquire_loop.hpp"
#include "leader/elector.hpp"

namespace leader::detail {

/// The generic election engine every elector shares (one per elector, shared by copies).
class ElectionCore : public std::enable_shared_from_this<ElectionCore> {
 public:
  /// When a store call was sent and when its reply came, on the elector's clock.
  struct Exchange {
    TimePoint sent;
    TimePoint replied;
  };
  ElectionCore(std::shared_ptr<LeaseStore> store, ElectionOptions options, int slots,
               ElectorHooks hooks);
  /// Waits for the lease up to wait_time; the guard holds it (watched and, with auto_extend,
  /// renewed by the renewal scheduler).
  /// `lock` is a validated name (Elector::scoped).
  Acquisition acquire(const std::string& lock, const std::stop_token& caller);
  /// What acquire_async completes with: the acquisition, or what acquire() would have thrown.
  using AcquireDone = Elector::AcquireDone;
  /// True when acquire_async() holds no thread while it waits: the store attempts and waits on
  /// its own I/O thread (detail::AsyncAttempts: Redis, standalone or Sentinel), the elector runs
  /// on the real clock, and no strategic turns check runs before each acquire.
  [[nodiscard]] bool acquires_async() const noexcept;
  /// acquire() without blocking the caller (requires acquires_async()): each attempt and each
  /// pause between attempts run on the store's I/O thread; `done` runs exactly once there (never
  /// inside this call) and must not block. Same grants, skips, backend errors and events as
  /// acquire(); fair waiting is the store's: a change of the lock wakes its earliest waiter of
  /// this process first (not this process's blocking waiters' queue).
  void acquire_async(std::string lock, std::stop_token caller, AcquireDone done);
  /// Ends a held lease: stops watching, releases (keeping min_lease_time; with `on_store` false
  /// leaves it to expire on the store), emits events. Returns the release call's failure (the
  /// lease then expires on the store at its ttl), null otherwise.
  std::exception_ptr finish(HeldLease& held, bool failed, const std::string& error,
                            bool on_store = true) noexcept;
  /// Reports a skip to the listener.
  void report_skip(const std::string& lock, const Skipped& skipped) noexcept;

  [[nodiscard]] const ElectionOptions& options() const { return options_; }
  [[nodiscard]] int slots() const { return slots_; }
  [[nodiscard]] const std::shared_ptr<LeaseStore>& store() const { return store_; }
  [[nodiscard]] const std::shared_ptr<Clock>& clock() const { return hooks_.clock; }
  [[nodiscard]] const std::shared_ptr<EventBus>& events() const { return hooks_.events; }
  /// True when acquire() and finish() can never block the calling thread: the store's calls
  /// never block (Capabilities::never_blocks) and wait_time is 0 (no backoff sleep). The async
  /// layers then run them inline instead of on a BlockingPool thread.
  [[nodiscard]] bool never_blocks() const noexcept { return never_blocks_; }
  [[nodiscard]] const Subscription& history_feed() const { return history_; }

  /// Hooks of strategic elections: `check` runs before each acquire (a Skipped it returns is the
  /// call's result), `record` learns how each held lease ended (true: the action completed).
  struct Turns {
    std::function<std::optional<Skipped>(const std::string& lock)> check;
    std::function<void(bool completed)> record;
  };
  /// Installs `turns`; call before the core is shared.
  void set_turns(Turns turns) { turns_ = std::move(turns); }

 private:
  friend class AsyncAcquisition;  // acquire_async's state (async_acquisition.cpp)
  Acquisition on_backend_error(const std::string& lock, const BackendError& e);
  /// Starts holding a granted lease (watched, events emitted); throws failed_precondition (after
  /// releasing it) when the grant is too short for an explicit safety margin. `unknown_before`:
  /// an earlier attempt of this call had an unknown outcome.
  std::shared_ptr<HeldLease> hold(const std::string& lock, const Lease& granted, Exchange acquire,
                                  const std::stop_token& caller, bool unknown_before);
  /// Releases, best effort, a lease an attempt with an unknown outcome may have left.
  void release_ghost(const LeaseRequest& request) noexcept;
  /// How both drivers end a call without a grant (`end` is not go_on): the lease an attempt
  /// with an unknown outcome may hold is released (`ghost_aside`: on a BlockingPool thread, for
  /// a driver on the store's I/O thread), then the Skipped (reported) or the backend error
  /// (`failure` for `failed`, the loop's last error at the wait's end) as on_backend_error has it.
  Acquisition end_without_grant(const std::string& lock, const LeaseRequest& request,
                                const AcquireLoop& loop, AcquireLoop::End end,
                                const BackendError* failure = nullptr, bool ghost_aside = false);
  Duration jittered(Duration backoff);
  /// The options, shared with the held leases (they keep this core alive).
  std::shared_ptr<const ElectionOptions> shared_options() {
    return {shared_from_this(), &options_};
  }
  /// The renewal scheduler of the elector's clock, looked up once.
  RenewalScheduler& scheduler();
  /// The deadline of one store call sent at `sent` (read on the elector's clock).
  [[nodiscard]] Deadline call_deadline(TimePoint sent) const;
  std::shared_ptr<LeaseStore> store_;
  ElectionOptions options_;
  int slots_;
  ElectorHooks hooks_;
  bool real_clock_ = false;  // hooks_.clock is Clock::system(): its readings are Deadline's time
  Duration call_timeout_{};  // options_.effective_call_timeout()
  /// store_ itself when it is the CheckedStore (leader::open, make_memory_store): the requests
  /// this core builds and the leases it holds skip its second validation.
  CheckedStore* checked_ = nullptr;
  bool never_blocks_ = false;
  WaitsInLine* line_ = nullptr;     // the store's line for fair waiters, when it keeps one
  AsyncAttempts* async_ = nullptr;  // the store's asynchronous attempts, when it has them
  LockWatcher* watcher_ = nullptr;  // the store's watch, when it has one (otherwise polled)
  std::atomic<RenewalScheduler*> scheduler_{nullptr};
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
  Subscription history_;  // feeds hooks_.history
  Turns turns_;
};

/// Calls `f(*listener)` when there is a listener; a listener's failure never disturbs the
/// election.
template <class F>
void notify(ElectionListener* listener, F&& f) noexcept {
  if (!listener) return;
  try {
    f(*listener);
  } catch (...) {  // listener failures never disturb the election
  }
}

}  // namespace leader::detail
