#include "leader/elector.hpp"

#include <utility>

#include "election_core.hpp"
#include "held_lease.hpp"

namespace leader {

std::string_view to_string(SkipReason reason) noexcept {
  switch (reason) {
    case SkipReason::contention:
      return "contention";
    case SkipReason::backend_error:
      return "backend_error";
    case SkipReason::cancelled:
      return "cancelled";
    case SkipReason::lease_lost:
      return "lease_lost";
  }
  return "unknown";
}

LeaseGuard::LeaseGuard(std::shared_ptr<detail::HeldLease> held) : ctx_(std::move(held)) {}

LeaseGuard::LeaseGuard(LeaseGuard&& other) noexcept
    : ctx_(std::move(other.ctx_)), ended_(std::exchange(other.ended_, false)) {}

LeaseGuard& LeaseGuard::operator=(LeaseGuard&& other) noexcept {
  if (this != &other) {
    release();
    ctx_.held_ = std::move(other.ctx_.held_);
    ended_ = std::exchange(other.ended_, false);
  }
  return *this;
}

LeaseGuard::~LeaseGuard() {
  if (!ended_) release();
}

const LeaseStore* LeaseGuard::store() const {
  return ctx_.held_ ? ctx_.held_->store().get() : nullptr;
}

std::exception_ptr LeaseGuard::release(bool failed, const std::string& error) noexcept {
  if (!ctx_.held_) return nullptr;
  ended_ = true;
  return ctx_.held_->core->finish(*ctx_.held_, failed, error);  // the first call ends it
}

void LeaseGuard::abandon() noexcept {
  if (!ctx_.held_) return;
  ctx_.held_->core->finish(*ctx_.held_, false, {}, false);
  ended_ = true;
}

namespace detail {
namespace {

struct ThreadHoldEntry {
  const LeaseStore* store;
  LeaderContext* ctx;
};
// The leases this thread runs actions under, innermost last.
thread_local std::vector<ThreadHoldEntry> thread_holds;

}  // namespace

ThreadHold::ThreadHold(const LeaseStore* store, LeaderContext& ctx) {
  thread_holds.push_back({store, &ctx});
}

ThreadHold::~ThreadHold() { thread_holds.pop_back(); }

LeaderContext* held_on_this_thread(const LeaseStore* store, std::string_view lock) noexcept {
  for (std::size_t i = thread_holds.size(); i-- > 0;) {  // innermost first
    const ThreadHoldEntry& hold = thread_holds[i];
    if (hold.store == store && hold.ctx->lock_name() == lock) return hold.ctx;
  }
  return nullptr;
}

}  // namespace detail

Elector::Elector(std::shared_ptr<detail::ElectionCore> core, std::string tenant)
    : core_(std::move(core)), tenant_(std::move(tenant)) {}

Acquisition Elector::acquire(std::string_view lock, const std::stop_token& stop) const {
  return core_->acquire(scoped(lock), stop);
}

const ElectionOptions& Elector::options() const { return core_->options(); }

const std::shared_ptr<LeaseStore>& Elector::store() const { return core_->store(); }

bool Elector::acquire_never_blocks() const noexcept { return core_->never_blocks(); }

void Elector::acquire_async(std::string_view lock, std::stop_token stop, AcquireDone done) const {
  core_->acquire_async(scoped(lock), std::move(stop), std::move(done));
}

bool Elector::acquires_async() const noexcept { return core_->acquires_async(); }

EventBus& Elector::events() const { return *core_->events(); }

std::shared_ptr<EventBus> Elector::event_bus() const { return core_->events(); }

const Subscription& Elector::history_feed() const { return core_->history_feed(); }

LeaderContext* Elector::reentered(std::string_view lock) const {
  if (!core_->options().reentrant) return nullptr;
  return detail::held_on_this_thread(core_->store().get(), scoped(lock));
}

std::string Elector::scoped(std::string_view lock) const {
  if (tenant_.empty()) {
    validate_lock_name(lock);
    return std::string(lock);
  }
  return tenant_lock_name(tenant_, lock);
}

LockState Elector::inspect(std::string_view lock) const {
  return core_->store()->inspect(scoped(lock),
                                 Deadline::after(core_->options().effective_call_timeout()));
}

LeaderElector::LeaderElector(std::shared_ptr<LeaseStore> store, ElectionOptions options,
                             ElectorHooks hooks)
    : Elector(std::make_shared<detail::ElectionCore>(std::move(store), std::move(options), 0,
                                                     std::move(hooks)),
              {}) {}

LeaderElector LeaderElector::for_tenant(std::string_view tenant) const {
  validate_tenant_id(tenant);
  return LeaderElector(core_, std::string(tenant));
}

}  // namespace leader
