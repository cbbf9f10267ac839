// Groups of N slots (one Lease object per slot, "<lock>-slot<K>") and the rule that a lock keeps
// one shape while a holder is live. Kubernetes has no multi-object transaction, so the shape is
// kept by "write your own object, then read the others'" on both sides: a single acquirer writes
// the base object and then lists the slots; a group acquirer writes its slot and then reads the
// base object and the other slots. Whichever write came second is seen by the other side's read,
// so at least one side sees the other and withdraws (README.md, "Groups and the lock's shape").

#include <map>

#include "k8s_store.hpp"
#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr int kFenceAttempts = 8;  // group members drawing tokens at once conflict on the counter

}  // namespace

Acquired K8sStore::acquire_group(const LeaseRequest& request, Deadline deadline) {
  const std::string id = holder_identity(request.node_id, request.owner);
  TimePoint received{};
  std::map<std::string, std::pair<LeaseView, nlohmann::json>> slots;
  for (auto& [v, object] : lock_objects(request.lock, received, deadline)) {
    if (v.holder == id && v.slot) {  // the owner's retry: its own slot back, expiry reset
      Grant g{request.lock, id, lease_seconds(request.ttl), false, request.slots, v.slot};
      auto again = write(v.name, object, g, deadline);
      if (!again) return {};
      return {lease_of(request, LeaseView::of(*again).fence, *v.slot)};
    }
    const bool live = !v.holder.empty() && judge(v, received).live;
    const int shape = v.slot ? v.slots.value_or(0) : 0;
    if (live && (!v.slot || shape != request.slots))
      throw detail::group_size_mismatch("k8s", request.lock, shape, request.slots);
    if (v.slot) slots.emplace(v.name, std::make_pair(v, object));
  }
  std::optional<std::uint64_t> fence;  // drawn once, before the first slot write
  for (int k = 0; k < request.slots && !deadline.expired(); ++k) {
    const std::string name = slot_object_name(request.lock, k);
    nlohmann::json current;  // null: create
    if (auto it = slots.find(name); it != slots.end()) {
      const LeaseView& v = it->second.first;
      if (v.slot != k) continue;  // an object of another lock or slot under this name
      if (!v.holder.empty() && judge(v, received).live) continue;
      current = it->second.second;
    }
    Grant g{request.lock, id, lease_seconds(request.ttl), true, request.slots, k};
    if (!fence) fence = next_group_fence(request, deadline);
    g.fence = fence;
    auto written = write(name, current, g, deadline);
    if (!written) continue;  // 409: another contender took this slot first; try the next
    check_group_shape(request, name, *written, g, deadline);
    return {lease_of(request, LeaseView::of(*written).fence, k)};
  }
  return {};
}

std::uint64_t K8sStore::next_group_fence(const LeaseRequest& request, Deadline deadline) {
  const std::string base = object_name(request.lock);
  for (int attempt = 0; attempt < kFenceAttempts; ++attempt) {
    const Reply r = api_.get(base, deadline);
    nlohmann::json current;  // null: create the base object, free, with counter 1
    bool expired_single = false;
    if (r.ok()) {
      const LeaseView v = LeaseView::of(r.body);
      check_owner_lock(v, request.lock);
      if (!v.slot && !v.holder.empty()) {
        if (judge(v, r.received).live)
          throw detail::group_size_mismatch("k8s", request.lock, 0, request.slots);
        // Expired: freed in the counter's write (conditional on the version judged expired).
        // Kept as holder, the bump would restart every observer's count of it, and the group's
        // shape check (check_group_shape) would then see a live single lease and withdraw.
        expired_single = true;
      }
      current = r.body;
    }
    const auto object = bump_fence(current, base, request.lock, expired_single);
    const Reply w =
        current.is_null() ? api_.create(object, deadline) : api_.replace(base, object, deadline);
    if (w.ok()) {
      saw_write(w);
      return LeaseView::of(w.body).fence;
    }
  }
  throw BackendError(ErrorCode::unavailable, "k8s",
                     "the fencing counter of lock '" + request.lock + "' kept changing under " +
                         std::to_string(kFenceAttempts) + " conditional writes");
}

void K8sStore::check_single_shape(const LeaseRequest& request, const nlohmann::json& written,
                                  const Grant& grant, Deadline deadline) {
  TimePoint received{};
  const std::string base = object_name(request.lock);
  for (const auto& [v, object] : lock_objects(request.lock, received, deadline)) {
    if (!v.slot || v.name == base || v.holder.empty()) continue;
    if (!judge(v, received).live) continue;
    withdraw(base, written, grant, deadline);
    throw detail::group_size_mismatch("k8s", request.lock, v.slots.value_or(0), 0);
  }
}

void K8sStore::check_group_shape(const LeaseRequest& request, const std::string& own_name,
                                 const nlohmann::json& written, const Grant& grant,
                                 Deadline deadline) {
  const std::string base = object_name(request.lock);
  const Reply r = api_.get(base, deadline);
  if (r.ok()) {
    const LeaseView v = LeaseView::of(r.body);
    if ((!v.lock || *v.lock == request.lock) && !v.slot && !v.holder.empty() &&
        judge(v, r.received).live) {
      withdraw(own_name, written, grant, deadline);
      throw detail::group_size_mismatch("k8s", request.lock, 0, request.slots);
    }
  }
  TimePoint received{};
  for (const auto& [v, object] : lock_objects(request.lock, received, deadline)) {
    if (!v.slot || v.name == own_name || v.holder.empty()) continue;
    if (v.slots.value_or(0) == request.slots || !judge(v, received).live) continue;
    withdraw(own_name, written, grant, deadline);
    throw detail::group_size_mismatch("k8s", request.lock, v.slots.value_or(0), request.slots);
  }
}

}  // namespace leader::k8s
