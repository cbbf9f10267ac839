// ElectionCore::acquire_async: the asynchronous driver (AsyncAcquisition), on the store's I/O
// thread.

#include <atomic>
#include <optional>

#include "acquire_loop.hpp"
#include "checked_store.hpp"
#include "election_core.hpp"
#include "held_lease.hpp"
#include "leader/blocking_pool.hpp"
#include "leader/detail/capabilities.hpp"
#include "owner_token.hpp"

namespace leader::detail {

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
  // The loop's last error is dropped first: it shares its message's reference count with the
  // copy an error outcome carries to the caller, whose thread may drop that copy at once.
  void deliver(Acquisition acq, std::exception_ptr error) {
    loop_.contended();
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

}  // namespace leader::detail
