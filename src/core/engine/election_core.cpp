// ElectionCore: construction, the end of a call without a grant, skips and backend errors. The
// drivers: blocking_acquisition.cpp and async_acquisition.cpp; holding a lease: holding.cpp.

#include "election_core.hpp"

#include <random>

#include "acquire_loop.hpp"
#include "checked_store.hpp"
#include "held_lease.hpp"
#include "leader/blocking_pool.hpp"
#include "leader/detail/capabilities.hpp"
#include "leader/history.hpp"
#include "renewal.hpp"

namespace leader::detail {
namespace {

void publish(EventBus& bus, ElectionEvent e) noexcept {
  try {
    bus.publish(std::move(e));
  } catch (...) {  // events never disturb the election (allocation failure at worst)
  }
}

}  // namespace

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
  const Capabilities offers = store_->capabilities();
  checked_ = is_checked(*store_) ? offers.checked : nullptr;
  real_clock_ = hooks_.clock == Clock::system();
  never_blocks_ = options_.wait_time == Duration{0} && offers.never_blocks;
  line_ = offers.line;
  async_ = offers.async;
  watcher_ = offers.watch;
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
