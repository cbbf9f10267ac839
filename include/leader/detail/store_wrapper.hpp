#pragma once
/// @file store_wrapper.hpp
/// A store that forwards every call to another one (the CheckedStore of leader::open(), the
/// store of Metrics::instrument()). Optional capabilities that a wrapper does not implement
/// itself (LockWatcher) are looked up on the store it wraps, so wrapping never hides them.

#include "leader/store.hpp"

namespace leader::detail {

/// Implemented by wrapper stores beside LeaseStore.
class StoreWrapper {
 public:
  virtual ~StoreWrapper() = default;
  /// The store every call is forwarded to.
  [[nodiscard]] virtual LeaseStore& wrapped() const noexcept = 0;
};

/// The store under every wrapper around `store` (itself when it is no wrapper), for
/// store-specific casts.
[[nodiscard]] inline LeaseStore& innermost(LeaseStore& store) noexcept {
  LeaseStore* s = &store;
  while (const auto* w = dynamic_cast<const StoreWrapper*>(s)) s = &w->wrapped();
  return *s;
}

/// `store`, or the first store under its wrappers, that is a `Capability`; nullptr when none is.
template <class Capability>
[[nodiscard]] Capability* find_capability(LeaseStore& store) noexcept {
  for (LeaseStore* s = &store;;) {
    if (auto* c = dynamic_cast<Capability*>(s)) return c;
    const auto* w = dynamic_cast<const StoreWrapper*>(s);
    if (w == nullptr) return nullptr;
    s = &w->wrapped();
  }
}

}  // namespace leader::detail
