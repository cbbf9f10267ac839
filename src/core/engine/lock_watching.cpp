// What the engine and the stores' watches compare: the holders of two snapshots of a lock.

#include "leader/lock_watching.hpp"

#include <cstddef>

namespace leader {

bool same_holders(const LockState& a, const LockState& b) noexcept {
  if (a.holders.size() != b.holders.size()) return false;
  for (std::size_t i = 0; i < a.holders.size(); ++i) {
    const Holder& x = a.holders[i];
    const Holder& y = b.holders[i];
    if (x.owner != y.owner || x.fencing_token != y.fencing_token || x.slot != y.slot) return false;
  }
  return true;
}

}  // namespace leader
