#include "k8s_store.hpp"

#include <algorithm>
#include <set>

#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::k8s {
namespace {

constexpr int kOwnWriteAttempts = 4;  // 409s followed by one owner before giving up

// The expiry judge's record, as client-go's LeaderElector judges a Lease: which resourceVersion
// each held Lease object showed and since when on this process's steady clock, shared by every
// store instance of the process. A contender may take a Lease over only once it has seen the
// same resourceVersion for the record's leaseDurationSeconds; no wall clocks are compared
// (README.md, "Safety"). Thread-safe.
class Sightings {
 public:
  static Sightings& shared() {
    static Sightings instance;
    return instance;
  }
  // Records that object `key` showed `version` in a reply complete at `seen_at`; returns the
  // earliest time this process saw that same version.
  TimePoint observe(const std::string& key, const std::string& version, TimePoint seen_at) {
    std::lock_guard lock(mu_);
    auto [it, added] = seen_.try_emplace(key, Seen{version, seen_at});
    if (!added && it->second.version != version) it->second = {version, seen_at};
    if (!added && seen_at < it->second.since) it->second.since = seen_at;
    return it->second.since;
  }
  // Forgets `key` (seen free or deleted).
  void forget(const std::string& key) {
    std::lock_guard lock(mu_);
    seen_.erase(key);
  }

 private:
  struct Seen {
    std::string version;
    TimePoint since;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Seen> seen_;
};

std::string object_of(const Lease& lease) {
  return lease.slots == 0 ? object_name(lease.lock) : slot_object_name(lease.lock, lease.slot);
}

Grant grant_for(const Lease& lease, std::string holder, std::int32_t seconds) {
  Grant g;
  g.lock = lease.lock;
  g.holder = std::move(holder);
  g.duration_seconds = seconds;
  g.slots = lease.slots;
  if (lease.slots > 0) g.slot = lease.slot;
  return g;
}

// The items of a LIST reply (null: none); throws when the reply is no LeaseList.
nlohmann::json items_of(const Reply& r) {
  if (!r.ok() || !r.body.is_object())
    throw BackendError(ErrorCode::internal, "k8s", "LIST of leases gave no LeaseList");
  auto items = r.body.value("items", nlohmann::json::array());
  if (items.is_null()) return nlohmann::json::array();
  if (!items.is_array())
    throw BackendError(ErrorCode::internal, "k8s", "LIST of leases: items is not an array");
  return items;
}

}  // namespace

void check_owner_lock(const LeaseView& view, std::string_view lock) {
  if (view.lock && *view.lock != lock)
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "Lease object '" + view.name + "' belongs to lock '" + *view.lock +
                           "', not to '" + std::string(lock) +
                           "' (two lock names map to one object name; rename one lock)");
}

K8sStore::K8sStore(Config config) : api_(std::move(config)) {}

std::string K8sStore::key(const std::string& name) const { return api_.scope() + "/" + name; }

K8sStore::Judgement K8sStore::judge(const LeaseView& view, TimePoint received) {
  if (view.holder.empty()) {
    Sightings::shared().forget(key(view.name));
    return {};
  }
  // The uid joins the version: a re-created object (or a restarted double) may reuse a
  // resourceVersion this process saw on its predecessor; it never reuses the uid.
  const TimePoint since =
      Sightings::shared().observe(key(view.name), view.uid + "/" + view.resource_version, received);
  const Duration left = std::chrono::seconds(view.duration_seconds) -
                        std::chrono::duration_cast<Duration>(received - since);
  return {left > Duration{0}, std::max(left, Duration{0})};
}

void K8sStore::saw_write(const Reply& reply) {
  const LeaseView v = LeaseView::of(reply.body);
  (void)judge(v, reply.received);
}

void K8sStore::remember(const std::string& name, const nlohmann::json& object) {
  std::lock_guard lock(mu_);
  cache_[name] = object;
}

std::optional<nlohmann::json> K8sStore::remembered(const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = cache_.find(name);
  if (it == cache_.end()) return std::nullopt;
  return it->second;
}

std::optional<nlohmann::json> K8sStore::write(const std::string& name,
                                              const nlohmann::json& current, const Grant& grant,
                                              Deadline deadline) {
  const nlohmann::json object = apply_grant(current, name, grant);
  const Reply r =
      current.is_null() ? api_.create(object, deadline) : api_.replace(name, object, deadline);
  if (r.conflict() || r.not_found()) return std::nullopt;
  saw_write(r);
  remember(name, r.body);
  return r.body;
}

Acquired K8sStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  (void)lease_seconds(request.ttl);  // a ttl under a second is refused before any request
  return request.slots == 0 ? acquire_single(request, deadline) : acquire_group(request, deadline);
}

Acquired K8sStore::acquire_single(const LeaseRequest& request, Deadline deadline) {
  const std::string name = object_name(request.lock);
  const std::string id = holder_identity(request.node_id, request.owner);
  Grant grant{request.lock, id, lease_seconds(request.ttl), true, 0, std::nullopt};
  const Reply r = api_.get(name, deadline);
  nlohmann::json current;  // null: create
  if (r.ok()) {
    const LeaseView v = LeaseView::of(r.body);
    check_owner_lock(v, request.lock);
    if (v.slot)
      throw BackendError(ErrorCode::failed_precondition, "k8s",
                         "Lease object '" + name + "' is a group slot, not a single lease");
    if (v.holder == id) {  // the owner's retry: its own lease back, expiry reset
      grant.new_holder = false;
      auto again = write(name, r.body, grant, deadline);
      if (!again) return {};
      return {lease_of(request, LeaseView::of(*again).fence, 0)};
    }
    if (judge(v, r.received).live) return {};
    current = r.body;
  }
  auto written = write(name, current, grant, deadline);
  if (!written) return {};
  check_single_shape(request, *written, grant, deadline);
  return {lease_of(request, LeaseView::of(*written).fence, 0)};
}

LeaseStatus K8sStore::update_own(const std::string& name, const std::string& identity,
                                 const Grant& grant, Deadline deadline) {
  std::optional<nlohmann::json> current = remembered(name);
  for (int attempt = 0; attempt < kOwnWriteAttempts; ++attempt) {
    if (!current || LeaseView::of(*current).holder != identity) {
      const Reply r = api_.get(name, deadline);
      if (r.not_found()) return LeaseStatus::lost;
      current = r.body;
      if (LeaseView::of(r.body).holder != identity) return LeaseStatus::lost;
    }
    const Reply w = api_.replace(name, apply_grant(*current, name, grant), deadline);
    if (w.ok()) {
      saw_write(w);
      remember(name, w.body);
      return LeaseStatus::ok;
    }
    if (w.not_found()) return LeaseStatus::lost;
    current.reset();  // 409: another write came first; read it and look again
  }
  throw BackendError(ErrorCode::unavailable, "k8s",
                     "Lease '" + name + "' kept changing under " +
                         std::to_string(kOwnWriteAttempts) + " conditional writes of its holder");
}

Renewal K8sStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  const std::string id = holder_identity(lease.node_id, lease.owner);
  const std::int32_t seconds = lease_seconds(ttl);  // whole seconds, rounded down: the grant
  const auto status = update_own(object_of(lease), id, grant_for(lease, id, seconds), deadline);
  if (status != LeaseStatus::ok) return {};
  return {LeaseStatus::ok, std::chrono::seconds(seconds)};
}

LeaseStatus K8sStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  const std::string id = holder_identity(lease.node_id, lease.owner);
  // keep_for > 0: stay the holder for keep_for more; otherwise free it as client-go's release
  // does (holderIdentity "", leaseDurationSeconds 1, leaseTransitions kept).
  // keep_for is no grant a holder acts on: rounded up (the lock stays taken at least that long).
  const Grant g = keep_for > Duration{0} ? grant_for(lease, id, duration_seconds(keep_for))
                                         : grant_for(lease, "", 1);
  return update_own(object_of(lease), id, g, deadline);
}

void K8sStore::withdraw(const std::string& name, const nlohmann::json& written, const Grant& grant,
                        Deadline deadline) {
  Grant free = grant;
  free.holder.clear();
  free.new_holder = false;
  free.duration_seconds = 1;
  try {
    const Reply w = api_.replace(name, apply_grant(written, name, free), deadline);
    if (w.ok()) {
      saw_write(w);
      return;
    }
    if (w.conflict()) (void)update_own(name, grant.holder, free, deadline);
  } catch (const BackendError&) {
    // Left held: it expires after its duration like any lease whose holder vanished.
  }
}

LockState K8sStore::inspect(std::string_view lock, Deadline deadline) {
  return read_lock(lock, deadline).state;
}

K8sStore::LockRead K8sStore::read_lock(std::string_view lock, Deadline deadline) {
  LockRead out;
  LockState& state = out.state;
  state.lock = std::string(lock);
  const std::string name = object_name(lock);
  auto add = [&](const LeaseView& v, TimePoint received, int slot) {
    if (v.holder.empty()) return;
    const Judgement j = judge(v, received);
    if (!j.live) return;
    auto [node, owner] = split_identity(v.holder);
    state.holders.push_back({node, owner, v.fence, slot, j.left});
  };
  TimePoint received{};
  const auto objects = lock_objects(lock, received, deadline, &out.version);
  const Reply r = api_.get(name, deadline);
  if (r.ok()) {
    const LeaseView v = LeaseView::of(r.body);
    check_owner_lock(v, lock);
    if (!v.slot) add(v, r.received, 0);
  }
  for (const auto& [v, object] : objects) {
    if (v.name == name) out.labelled_base = true;
    if (v.slot && v.name != name) add(v, received, *v.slot);
  }
  std::sort(state.holders.begin(), state.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
  return out;
}

std::vector<std::pair<LeaseView, nlohmann::json>> K8sStore::lock_objects(std::string_view lock,
                                                                         TimePoint& received,
                                                                         Deadline deadline,
                                                                         std::string* version) {
  const Reply r = api_.list(std::string(kLockLabel) + "=" + short_hash(lock), deadline);
  const nlohmann::json items = items_of(r);
  received = r.received;
  if (version != nullptr) {
    const auto meta = r.body.value("metadata", nlohmann::json::object());
    const auto rv = meta.is_object() ? meta.value("resourceVersion", nlohmann::json()) : nullptr;
    *version = rv.is_string() ? rv.get<std::string>() : std::string();
  }
  std::vector<std::pair<LeaseView, nlohmann::json>> out;
  for (const auto& item : items) {
    LeaseView v = LeaseView::of(item);
    if (v.lock && *v.lock == lock) out.emplace_back(std::move(v), item);
  }
  return out;
}

std::vector<LockState> K8sStore::list_locks(std::string_view prefix, Deadline deadline) {
  std::set<std::string> names;
  for (const auto& item : items_of(api_.list("", deadline))) {
    const LeaseView v = LeaseView::of(item);
    if (!v.lock || v.lock->compare(0, prefix.size(), prefix) != 0)
      continue;  // not ours / not under prefix
    names.insert(*v.lock);
  }
  return detail::held_locks(*this, names, deadline);
}

}  // namespace leader::k8s
