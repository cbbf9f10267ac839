#pragma once
// Internal: a held lease's renew slot. One renew call per lease at a time, scheduled
// (renewal.cpp) or asked for (LeaderContext::extend), so replies cannot be applied out of order;
// the end of a lease (ElectionCore::finish) waits only for a call under way. Every member is
// guarded by the lease's mutex; whoever frees the slot notifies the lease's condition variable.

namespace leader::detail {

class RenewSlot {
 public:
  /// True while a renewal is queued or its store call is under way.
  [[nodiscard]] bool taken() const noexcept { return taken_; }
  /// True while the store call of the renewal is under way.
  [[nodiscard]] bool calling() const noexcept { return calling_; }
  /// Takes the slot for a renewal the scheduler queues; false when it is already taken.
  bool queue() noexcept {
    if (taken_) return false;
    taken_ = true;
    return true;
  }
  /// The queued renewal's store call starts now.
  void start_call() noexcept { calling_ = true; }
  /// Takes the free slot and starts the call at once (extend(), after waiting for `!taken()`).
  void take_and_call() noexcept { taken_ = calling_ = true; }
  /// The renewal ended, or was dropped before its call.
  void free() noexcept { taken_ = calling_ = false; }

 private:
  bool taken_ = false;
  bool calling_ = false;
};

}  // namespace leader::detail
