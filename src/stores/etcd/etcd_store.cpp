#include "etcd_store.hpp"

#include <algorithm>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "http/json.hpp"
#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

// Whether a failed write may have been applied: no reply, a proposal that timed out or met a
// leader change, or a reply that could not be read. The other codes mean nothing was applied.
bool outcome_unknown(const BackendError& e) {
  return e.code() == ErrorCode::deadline_exceeded || e.code() == ErrorCode::internal;
}

}  // namespace

std::int64_t lease_id_for_owner(std::string_view owner) {
  std::uint64_t v = 0;
  bool hex = owner.size() >= 15;
  for (std::size_t i = 0; hex && i < 15; ++i) {
    char c = owner[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) hex = false;
    v = v * 16 + static_cast<std::uint64_t>(d < 0 ? 0 : d);
  }
  if (!hex) {
    v = 1469598103934665603ULL;  // FNV-1a 64
    for (unsigned char c : owner) v = (v ^ c) * 1099511628211ULL;
    v &= (1ULL << 60) - 1;
  }
  return static_cast<std::int64_t>(v == 0 ? 1 : v);
}

Duration covered(TimePoint sent, std::int64_t granted, TimePoint now) {
  return std::chrono::floor<Duration>(sent + std::chrono::seconds(granted) - now);
}

std::string slot_name(int slot) { return "slot-" + std::to_string(slot); }

std::optional<int> slot_of(std::string_view name) {
  constexpr std::string_view kSlotPrefix = "slot-";
  if (!name.starts_with(kSlotPrefix)) return std::nullopt;
  const auto slot = http::whole_number<int>(name.substr(kSlotPrefix.size()));
  if (!slot || *slot < 0) return std::nullopt;
  return slot;
}

Lease granted(const LeaseRequest& request, std::int64_t token, int slot, TimePoint sent) {
  return {request.lock, request.owner, request.node_id, static_cast<std::uint64_t>(token),
          slot,         request.slots, request.ttl,     sent};
}

std::string owner_of(const KeyValue& kv) {
  return http::field<std::string>(Json::parse(kv.value, nullptr, false), "owner").value_or("");
}

EtcdStore::EtcdStore(Config config)
    : gateway_(config), prefix_(std::move(config.prefix)), scheme_("etcd") {}

EtcdStore::~EtcdStore() {
  const Deadline all = Deadline::after(std::chrono::seconds(1));
  retry_leaving(all);
  std::vector<std::int64_t> ids;
  {
    std::lock_guard lock(sessions_mu_);
    for (auto& entry : sessions_) {
      std::lock_guard session(entry.second->mu);
      if (entry.second->s.id != 0) ids.push_back(entry.second->s.id);
    }
  }
  // A session that still carries keys is left to expire on the server: those keys may be leases
  // handed to another store object, which keeps them (its renew moves them to its own session).
  for (const std::int64_t id : ids) {
    if (all.expired()) break;
    try {
      Reply r =
          gateway_.post("/v3/lease/timetolive", {{"ID", std::to_string(id)}, {"keys", true}}, all);
      if (!r.ok() || int_field(r.body, "TTL") < 0) continue;
      if (auto keys = r.body.find("keys");
          keys != r.body.end() && keys->is_array() && !keys->empty())
        continue;
      revoke_quietly(id, all);
    } catch (...) {  // it then expires on the server after its ttl
    }
  }
}

std::string EtcdStore::lock_prefix(std::string_view lock) const {
  return prefix_ + "/" + std::string(lock) + "/";
}

std::string EtcdStore::holder_key(const Lease& lease) const {
  if (lease.slots >= 1) return lock_prefix(lease.lock) + slot_name(lease.slot);
  return lock_prefix(lease.lock) + lease_hex(lease_id_for_owner(lease.owner));
}

EtcdStore::Session EtcdStore::grant(std::int64_t ttl_s, Deadline deadline) {
  const TimePoint sent = steady_now();
  const Json r = gateway_.call("/v3/lease/grant", {{"TTL", std::to_string(ttl_s)}}, deadline);
  const Session fresh{int_field(r, "ID"), int_field(r, "TTL"), sent};
  if (fresh.id == 0 || fresh.granted <= 0)
    throw BackendError(ErrorCode::internal, "etcd", "lease grant answered no lease: " + r.dump());
  if (fresh.granted > ttl_s) {
    std::int64_t seen = min_ttl_.load();
    while (fresh.granted > seen && !min_ttl_.compare_exchange_weak(seen, fresh.granted)) {
    }
  }
  return fresh;
}

void EtcdStore::revoke_quietly(std::int64_t id, Deadline deadline) noexcept {
  if (id == 0 || deadline.expired()) return;
  try {
    (void)gateway_.post("/v3/lease/revoke", {{"ID", std::to_string(id)}}, deadline);
  } catch (...) {  // the lease then expires on the server after its ttl
  }
}

// ---- session leases ----------------------------------------------------------------------------

EtcdStore::SessionSlot& EtcdStore::slot(std::int64_t ttl_s) {
  std::lock_guard lock(sessions_mu_);
  auto& entry = sessions_[ttl_s];
  if (!entry) entry = std::make_unique<SessionSlot>();
  return *entry;
}

EtcdStore::Session EtcdStore::current(std::int64_t ttl_s) {
  SessionSlot* found = nullptr;
  {
    std::lock_guard lock(sessions_mu_);
    auto it = sessions_.find(ttl_s);
    if (it == sessions_.end()) return {};
    found = it->second.get();
  }
  std::lock_guard lock(found->mu);
  return found->s;
}

std::int64_t EtcdStore::session_lease(std::int64_t ttl_s) { return current(ttl_s).id; }

void EtcdStore::refreshed(std::int64_t ttl_s, std::int64_t id, std::int64_t granted,
                          TimePoint sent) {
  SessionSlot& sl = slot(ttl_s);
  std::lock_guard lock(sl.mu);
  if (sl.s.id != id) return;  // replaced meanwhile
  sl.s.granted = granted;
  sl.s.sent = std::max(sl.s.sent, sent);
}

void EtcdStore::drop(std::int64_t ttl_s, std::int64_t id) {
  SessionSlot& sl = slot(ttl_s);
  std::lock_guard lock(sl.mu);
  if (sl.s.id == id) sl.s = {};
}

std::optional<std::int64_t> EtcdStore::keep_alive(std::int64_t id, Deadline deadline) {
  if (abandoned(id)) return std::nullopt;
  Json r = gateway_.call("/v3/lease/keepalive", {{"ID", std::to_string(id)}}, deadline);
  return int_field(r, "TTL");  // absent (0) or -1 when the lease is gone
}

void EtcdStore::abandon_sessions() noexcept {
  try {
    const TimePoint now = steady_now();
    std::vector<std::pair<std::int64_t, TimePoint>> gone;
    {
      std::lock_guard lock(sessions_mu_);
      for (auto& entry : sessions_) {
        std::lock_guard session(entry.second->mu);
        Session& s = entry.second->s;
        if (s.id == 0) continue;
        // The server expires it its TTL after the last keep-alive applied (one still in flight
        // now at the latest): remembered well beyond that, for calls that read it before now.
        gone.emplace_back(s.id,
                          now + std::chrono::seconds(2 * s.granted) + std::chrono::minutes(1));
        s = {};
      }
    }
    std::lock_guard lock(abandoned_mu_);
    std::erase_if(abandoned_, [&](const auto& e) { return e.second < now; });
    for (const auto& [id, until] : gone) abandoned_[id] = until;
    any_abandoned_.store(!abandoned_.empty(), std::memory_order_release);
  } catch (...) {  // allocation failure: the sessions dropped so far are abandoned all the same
  }
}

bool EtcdStore::abandoned(std::int64_t id) {
  if (!any_abandoned_.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(abandoned_mu_);
  return abandoned_.count(id) != 0;
}

EtcdStore::Session EtcdStore::ensure(std::int64_t ttl_s, Duration want, TimePoint now,
                                     Deadline deadline, std::optional<TimePoint> fresh_since) {
  const auto good = [&](const Session& s) {
    if (s.id == 0) return false;
    if (fresh_since) return s.sent >= *fresh_since;
    // Refreshed when what the session still covers would cut the ttl asked by more than a tenth
    // or a second (etcd rounds TTLs up to whole seconds: usually nothing is cut at all).
    const Duration cut = want - covered(s.sent, s.granted, now);
    return cut <= std::min<Duration>(want / 10, std::chrono::seconds(1));
  };
  SessionSlot& sl = slot(ttl_s);
  {
    std::lock_guard lock(sl.mu);
    if (good(sl.s)) return sl.s;
  }
  // Single flight: concurrent callers wait for one grant or keep-alive and share it.
  std::unique_lock refresh(sl.refresh, std::defer_lock);
  if (!refresh.try_lock_until(deadline.at()))
    throw BackendError(ErrorCode::deadline_exceeded, "etcd",
                       "deadline passed while waiting for the session lease of " +
                           std::to_string(ttl_s) + " s (nothing was sent)");
  Session s;
  {
    std::lock_guard lock(sl.mu);
    s = sl.s;
  }
  if (good(s)) return s;
  if (s.id != 0 && covered(s.sent, s.granted, steady_now()) > Duration{0}) {
    const TimePoint sent = steady_now();
    const std::optional<std::int64_t> kept = keep_alive(s.id, deadline);
    if (kept && *kept > 0) {
      refreshed(ttl_s, s.id, *kept, sent);
      std::lock_guard lock(sl.mu);
      if (sl.s.id == s.id) return sl.s;  // else abandoned meanwhile: a new one below
    } else if (kept) {
      drop(ttl_s, s.id);  // gone on the server: its keys with it
    }
  }
  // None yet, gone, or past what this store ever kept it alive for (no holder relies on it: each
  // holder's reported ttl ended by then), so a new one.
  const Session fresh = grant(ttl_s, deadline);
  std::lock_guard lock(sl.mu);
  sl.s = fresh;
  return fresh;
}

std::optional<Json> EtcdStore::txn_on_lease(const Json& txn, Deadline deadline) {
  Reply r = gateway_.post("/v3/kv/txn", txn, deadline);
  if (r.ok()) return std::move(r.body);
  // "etcdserver: requested lease not found": refused as a whole, nothing was written.
  if (r.code == kNotFound && r.message.find("lease not found") != std::string::npos)
    return std::nullopt;
  gateway_.fail(r, "/v3/kv/txn");
}

// ---- reads -------------------------------------------------------------------------------------

std::optional<KeyValue> EtcdStore::get(const std::string& key, Deadline deadline) {
  std::vector<KeyValue> kvs =
      decode_kvs(gateway_.call("/v3/kv/range", ops::range_key(key), deadline));
  if (kvs.empty()) return std::nullopt;
  return std::move(kvs.front());
}

std::vector<KeyValue> EtcdStore::list(const std::string& prefix, Deadline deadline,
                                      std::int64_t* revision) {
  const Json r = gateway_.call("/v3/kv/range", ops::range_prefix(prefix), deadline);
  if (revision != nullptr) *revision = int_field(r.value("header", Json::object()), "revision");
  return decode_kvs(r);
}

std::string EtcdStore::slots_key(std::string_view lock) const {
  return prefix_ + "/" + std::string(lock);  // outside the Mutex prefix
}

// ---- acquire -----------------------------------------------------------------------------------

Acquired EtcdStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  retry_leaving(deadline);
  const std::int64_t ttl_s = ttl_seconds(request.ttl.count());
  for (int attempt = 0;; ++attempt) {
    // Read inside this call, before the Txn is sent: the elector's own stamp is earlier still.
    const TimePoint now = steady_now();
    const Session s = ensure(ttl_s, request.ttl, now, deadline);
    std::optional<Claim> claim;
    try {
      claim = request.slots >= 1 ? claim_group(request, s.id, now, deadline)
                                 : claim_single(request, s.id, now, deadline);
    } catch (const BackendError& e) {
      // A key may have landed on the session: a retry of this owner adopts it, but if none
      // comes, the renewals of the other keys there must not keep it alive.
      if (outcome_unknown(e)) abandon_sessions();
      throw;
    }
    if (!claim) {  // the session lease is gone on the server (expired, revoked): a new one, once
      drop(ttl_s, s.id);
      if (attempt == 0) continue;
      throw BackendError(ErrorCode::unavailable, "etcd",
                         "the session lease of " + std::to_string(ttl_s) +
                             " s was gone on the server twice in one acquisition");
    }
    // A fair waiter whose key is the lowest: its turn (the Mutex's holder). On the session just
    // ensured, the key lives as long as it does, as a fresh key would; on another lease (an
    // older session) adopt() moves it onto this one first.
    if (!claim->lease && claim->mine && !claim->seen.keys.empty() &&
        claim->seen.keys.front().key == claim->mine->key) {
      if (claim->mine->lease != s.id) return {adopt(request, *claim->mine, deadline)};
      claim->lease = granted(request, claim->mine->create_revision, 0, now);
    }
    if (claim->lease) {
      // The key lives as long as the session lease: until (its last refresh's send + TTL) at
      // least, which may come before now + ttl.
      claim->lease->ttl = std::min(request.ttl, covered(s.sent, s.granted, now));
      return {std::move(claim->lease)};
    }
    for (const KeyValue& kv : claim->seen.keys)  // ours: a retry after an unknown outcome
      if (owner_of(kv) == request.owner)
        if (auto mine = adopt(request, kv, deadline)) return {std::move(mine)};
    refuse_other_shape(request, claim->seen);
    return {};
  }
}

// `kv` is this owner's holder key: the same token and slot, its server expiry reset by a renew.
// A renewal that fails leaves the key on a session this store may keep alive, claimed by nobody
// unless the caller asks again.
std::optional<Lease> EtcdStore::adopt(const LeaseRequest& request, const KeyValue& kv,
                                      Deadline deadline) {
  const auto slot = slot_of(std::string_view(kv.key).substr(lock_prefix(request.lock).size()));
  if (request.slots >= 1 ? !slot || *slot >= request.slots : slot.has_value())
    return std::nullopt;  // held in another shape: the shape check reports it
  Lease lease = granted(request, kv.create_revision, slot.value_or(0), steady_now());
  Renewal renewed;
  try {
    renewed = renew(lease, request.ttl, deadline);
  } catch (const BackendError&) {
    abandon_sessions();  // the key exists: on failure nobody may claim it (the caller gave up)
    throw;
  }
  if (renewed.status != LeaseStatus::ok) return std::nullopt;
  lease.ttl = renewed.ttl;
  return lease;
}

std::pair<std::string, std::string> EtcdStore::contender(const LeaseRequest& request) const {
  const Json value = {{"node_id", request.node_id}, {"owner", request.owner}};
  return {lock_prefix(request.lock) + lease_hex(lease_id_for_owner(request.owner)), value.dump()};
}

// Free means no key at all under the prefix: the lowest create revision (the holder) of
// concurrency.Mutex exists whenever any contender key does. The failure branch reads the holder
// (this owner's own key, when a retry finds its first attempt landed). A fair waiter's failure
// branch also keeps its place in line, as the Mutex's Lock does: it puts its key unless the key
// exists already or a group holds the lock (slot keys: a single lease's key there would block
// the group's claims), then reads the holder and its own key.
std::optional<EtcdStore::Claim> EtcdStore::claim_single(const LeaseRequest& request,
                                                        std::int64_t lease_id, TimePoint sent,
                                                        Deadline deadline) {
  const std::string prefix = lock_prefix(request.lock);
  const auto [key, value] = contender(request);
  Json failure = Json::array();
  if (request.wait_in_line) {
    const std::string slots = prefix + "slot-";
    failure.push_back(
        {{"request_txn",
          ops::txn(Json::array({ops::create_revision_is(key, 0),
                                ops::create_revision_is(slots, 0, prefix_end(slots))}),
                   Json::array({{{"request_put", ops::put(key, value, lease_id)}}}))}});
  }
  failure.push_back({{"request_range", ops::range_prefix(prefix, 1)}});
  if (request.wait_in_line) failure.push_back({{"request_range", ops::range_key(key)}});
  Json txn = ops::txn(Json::array({ops::create_revision_is(prefix, 0, prefix_end(prefix))}),
                      Json::array({{{"request_put", ops::put(key, value, lease_id)}}}),
                      std::move(failure));
  std::optional<Json> reply = txn_on_lease(txn, deadline);
  if (!reply) return std::nullopt;
  Claim claim;
  if (txn_succeeded(*reply)) {
    claim.lease = granted(request, int_field((*reply)["header"], "revision"), 0, sent);
    return claim;
  }
  const std::size_t at = request.wait_in_line ? 1 : 0;
  claim.seen.keys = range_kvs(*reply, at);
  if (request.wait_in_line) {
    std::vector<KeyValue> mine = range_kvs(*reply, at + 1);
    if (!mine.empty()) claim.mine = std::move(mine.front());
  }
  return claim;
}

void EtcdStore::refuse_other_shape(const LeaseRequest& request, const Snapshot& seen) const {
  if (seen.keys.empty()) return;
  const KeyValue& holder = seen.keys.front();  // the lowest create revision holds
  const auto slot = slot_of(std::string_view(holder.key).substr(lock_prefix(request.lock).size()));
  int held = 0;
  if (slot) {
    const Json v = Json::parse(holder.value, nullptr, /*allow_exceptions=*/false);
    const int recorded = http::field<int>(v, "slots").value_or(0);
    held = seen.slots.value_or(recorded >= 1 ? recorded : std::max(request.slots, 1));
  }
  if (held == request.slots) return;
  throw detail::group_size_mismatch("etcd", request.lock, held, request.slots);
}

}  // namespace leader::etcd
