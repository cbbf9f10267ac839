#pragma once
// Internal: the engine's form of EventBus::publish() for the events of a held lease (elected,
// renewed, lost, released). The same sequence, state and delivery as publish(), but the event
// itself is built only when a subscriber or a pending notification needs it, so an election on
// a bus nobody listens to builds none; and each lease remembers where the bus keeps its lock's
// state, so later publications skip the lookup by name.

#include <atomic>
#include <span>

#include "leader/events.hpp"

namespace leader::detail {

/// Where one bus keeps the state of one lease's lock: null at first, set by the first
/// publication that finds it (one per lease, on its elector's bus only).
using BusSlot = std::atomic<void*>;

struct LeasePublishing {
  /// Builds the full event on demand: `make(context)`.
  struct EventMaker {
    const void* context;
    ElectionEvent (*make)(const void* context);
  };
  /// One lease event of publish_leases().
  struct LeasePublication {
    const LeaseInfo* lease;
    TimePoint deadline;
    EventMaker make;
    BusSlot* slot = nullptr;  ///< as publish_lease's
  };
  /// Publishes the event `kind` of `lease`, whose local deadline is now `deadline`, on `bus`.
  static void publish_lease(EventBus& bus, EventKind kind, const LeaseInfo& lease,
                            TimePoint deadline, EventMaker make, BusSlot* slot = nullptr);
  /// publish_lease() of every item, in order, under one lock of the bus (a renewal batch's
  /// `renewed` events: the workers renewing two halves of a batch do not queue on the bus per
  /// lease).
  static void publish_leases(EventBus& bus, EventKind kind,
                             std::span<const LeasePublication> items);
};

}  // namespace leader::detail
