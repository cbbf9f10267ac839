#include "held_lease.hpp"

#include <algorithm>
#include <vector>

#include "leader/uri.hpp"

namespace leader::detail {

std::condition_variable_any& HeldLease::cv() const {
  static std::array<std::condition_variable_any, 64> stripes;
  return stripes[(reinterpret_cast<std::uintptr_t>(this) / alignof(HeldLease)) % stripes.size()];
}

void HeldLease::request_stop() noexcept {
  std::optional<std::stop_source> made;
  {
    std::lock_guard lock(mu);
    if (stop_wanted.load(std::memory_order_relaxed)) return;
    stop_wanted.store(true, std::memory_order_release);
    made = stop_source;
  }
  // Outside `mu`: the token's callbacks run here, and may ask this lease anything.
  if (made) made->request_stop();
}

std::stop_token HeldLease::stop_token() {
  std::lock_guard lock(mu);
  if (!stop_source) {
    stop_source.emplace();
    // No callback can be registered yet: nothing runs under `mu`.
    if (stop_wanted.load(std::memory_order_relaxed)) stop_source->request_stop();
  }
  return stop_source->get_token();
}

void HeldLease::confirm_locked(TimePoint sent, Duration asked, const Lease& granted_lease) {
  // The identity is copied from the first grant only; renewals change the clock alone (the lock
  // name and node id stay in `info`: no string is copied per renewal).
  if (!has_owner) {
    // A token is 32 hex characters (CheckedStore refuses any other): copied in place.
    const std::size_t n = std::min(granted_lease.owner.size(), lease.owner.size());
    std::copy_n(granted_lease.owner.begin(), n, lease.owner.begin());
    has_owner = true;
    lease.fencing_token = granted_lease.fencing_token;
    lease.slot = granted_lease.slot;
    lease.slots = granted_lease.slots;
  }
  clock_.confirm(sent, asked, granted_lease.ttl, margin_rule());
}

namespace {
// What an event of a held lease is built from, only when the bus has someone to give it to.
struct Pending {
  const HeldLease* self;
  EventKind kind;
  TimePoint deadline;
  std::optional<LeaseOutcome> outcome;
  std::string* detail;  // moved into the event (null: none)
  std::optional<ErrorCode> code;

  static ElectionEvent make(const void* context) {
    const auto& p = *static_cast<const Pending*>(context);
    ElectionEvent e{.kind = p.kind,
                    .lock = p.self->info.lock,
                    .lease = p.self->info,
                    .started = p.self->started};
    e.deadline = p.deadline;
    e.outcome = p.outcome;
    if (p.detail != nullptr) e.detail = std::move(*p.detail);
    e.error_code = p.code;
    return e;
  }
};
}  // namespace

void HeldLease::publish(EventKind kind, std::string detail,
                        std::optional<ErrorCode> code) noexcept {
  try {
    Pending pending{this, kind, {}, {}, &detail, code};
    {
      std::lock_guard lock(mu);
      pending.deadline = clock_.deadline();
      pending.outcome = loss;
    }
    // The state of the lock is updated either way.
    LeasePublishing::publish_lease(bus(), kind, info, pending.deadline, {&pending, &Pending::make},
                                   &bus_slot);
  } catch (...) {  // events never disturb the election (allocation failure at worst)
  }
}

void HeldLease::publish_read(EventKind kind, TimePoint deadline,
                             std::optional<LeaseOutcome> outcome, std::string detail) noexcept {
  try {
    Pending pending{this, kind, deadline, outcome, &detail, std::nullopt};
    LeasePublishing::publish_lease(bus(), kind, info, deadline, {&pending, &Pending::make},
                                   &bus_slot);
  } catch (...) {  // events never disturb the election (allocation failure at worst)
  }
}

void HeldLease::publish_renewed(std::span<const std::shared_ptr<HeldLease>> leases) noexcept {
  try {
    std::vector<Pending> pending;
    pending.reserve(leases.size());
    for (const auto& held : leases) {
      std::lock_guard lock(held->mu);
      if (held->finished || held->lost) continue;  // ended meanwhile: no `renewed` after it
      pending.push_back({held.get(), EventKind::renewed, held->clock_.deadline(), held->loss,
                         nullptr, std::nullopt});
    }
    std::vector<LeasePublishing::LeasePublication> items;
    items.reserve(pending.size());
    for (std::size_t from = 0; from < pending.size();) {  // one call per run of one bus
      EventBus& bus = pending[from].self->bus();
      items.clear();
      std::size_t to = from;
      for (; to < pending.size() && &pending[to].self->bus() == &bus; ++to)
        items.push_back({&pending[to].self->info,
                         pending[to].deadline,
                         {&pending[to], &Pending::make},
                         &pending[to].self->bus_slot});
      LeasePublishing::publish_leases(bus, EventKind::renewed, items);
      from = to;
    }
  } catch (...) {  // events never disturb the election (allocation failure at worst)
  }
}

std::string HeldLease::end_renewal(TimePoint sent, Duration asked, std::optional<Renewal> outcome,
                                   bool* renewed_out) {
  std::string misfit;
  bool renewed = false;
  {
    std::lock_guard lock(mu);
    renewed = outcome && outcome->status == LeaseStatus::ok && !lost;
    renewal.free();
    if (outcome && outcome->status == LeaseStatus::ok) {
      // Only the times change: the lease's identity does not change on renewal.
      if (!lost) clock_.confirm(sent, asked, outcome->ttl, margin_rule());
      const Duration g = LeaseClock::granted(asked, outcome->ttl);
      misfit = margin_rule().misfit(g);
      if (!misfit.empty())
        misfit = "lock '" + info.lock + "': the store granted a ttl of " + format_duration(g) +
                 " where " + format_duration(asked) + " was asked; " + misfit;
    } else if (!outcome) {
      clock_.unknown_outcome(sent, asked, margin_rule());
      clock_.retry_from(clock().now());
    }
  }
  cv().notify_all();
  if (renewed_out != nullptr) {
    *renewed_out = renewed && misfit.empty();  // the caller publishes it (publish_renewed)
  } else if (renewed && misfit.empty()) {
    publish(EventKind::renewed);
  }
  return misfit;
}

}  // namespace leader::detail
