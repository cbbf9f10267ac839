#include "etcd_store.hpp"

#include <algorithm>
#include <charconv>

#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "ops.hpp"
#include "replies.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

// How long a lease last refreshed `granted` s after local time `sent` still lives from `now`, at
// least: the server restarted its TTL when it ran that grant or keep-alive, after `sent`.
Duration covered(TimePoint sent, std::int64_t granted, TimePoint now) {
  return std::chrono::floor<Duration>(sent + std::chrono::seconds(granted) - now);
}

bool too_many_ops(const Reply& r) {
  return r.message.find("too many operations") != std::string::npos;
}

// Whether a failed write may have been applied: no reply, a proposal that timed out or met a
// leader change, or a reply that could not be read. The other codes mean nothing was applied.
bool outcome_unknown(const BackendError& e) {
  return e.code() == ErrorCode::deadline_exceeded || e.code() == ErrorCode::internal;
}

}  // namespace

// The first kv of a Range, DeleteRange (prev_kvs) or Put (prev_kv) response inside a Txn reply.
std::optional<KeyValue> first_kv(const Json& txn_reply, const char* response, const char* field) {
  auto rs = txn_reply.find("responses");
  if (rs == txn_reply.end() || !rs->is_array() || rs->empty()) return std::nullopt;
  if (!(*rs)[0].is_object()) return std::nullopt;
  const Json& r = (*rs)[0].value(response, Json::object());
  auto kv = r.find(field);
  if (kv == r.end()) return std::nullopt;
  if (kv->is_array()) {
    if (kv->empty()) return std::nullopt;
    return decode_kv((*kv)[0]);
  }
  return decode_kv(*kv);
}

bool txn_succeeded(const Json& reply) {
  auto it = reply.find("succeeded");
  return it != reply.end() && it->is_boolean() && it->get<bool>();
}

KeyValue decode_kv(const Json& kv) {
  KeyValue out;
  out.key = bytes_field(kv, "key");
  out.value = bytes_field(kv, "value");
  out.create_revision = int_field(kv, "create_revision");
  out.mod_revision = int_field(kv, "mod_revision");
  out.lease = int_field(kv, "lease");
  return out;
}

std::string slot_name(int slot) { return "slot-" + std::to_string(slot); }

std::optional<int> slot_of(std::string_view name) {
  constexpr std::string_view kSlotPrefix = "slot-";
  if (!name.starts_with(kSlotPrefix)) return std::nullopt;
  name.remove_prefix(kSlotPrefix.size());
  int slot = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), slot);
  if (ec != std::errc() || p != name.data() + name.size() || slot < 0) return std::nullopt;
  return slot;
}

std::string owner_of(const KeyValue& kv) {
  Json v = Json::parse(kv.value, nullptr, /*allow_exceptions=*/false);
  auto owner = v.is_object() ? v.find("owner") : v.end();
  return owner != v.end() && owner->is_string() ? owner->get<std::string>() : "";
}

EtcdStore::EtcdStore(Config config) : gateway_(std::move(config)), scheme_("etcd") {}

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
  return gateway_.config().prefix + "/" + std::string(lock) + "/";
}

std::string EtcdStore::holder_key(const Lease& lease) const {
  if (lease.slots >= 1) return lock_prefix(lease.lock) + slot_name(lease.slot);
  return lock_prefix(lease.lock) + lease_hex(lease_id_for_owner(lease.owner));
}

std::int64_t EtcdStore::grant(std::int64_t id, std::int64_t ttl_s, Deadline deadline) {
  Json req = {{"TTL", std::to_string(ttl_s)}};
  if (id != 0) req["ID"] = std::to_string(id);
  Json r = gateway_.call("/v3/lease/grant", req, deadline);
  if (const std::int64_t got = int_field(r, "TTL"); got > ttl_s) {
    std::int64_t seen = min_ttl_.load();
    while (got > seen && !min_ttl_.compare_exchange_weak(seen, got)) {
    }
  }
  return int_field(r, "ID");
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
  const TimePoint sent = steady_now();
  Json r = gateway_.call("/v3/lease/grant", {{"TTL", std::to_string(ttl_s)}}, deadline);
  Session fresh{int_field(r, "ID"), int_field(r, "TTL"), sent};
  if (fresh.id == 0 || fresh.granted <= 0)
    throw BackendError(ErrorCode::internal, "etcd", "lease grant answered no lease: " + r.dump());
  if (fresh.granted > ttl_s) {
    std::int64_t seen = min_ttl_.load();
    while (fresh.granted > seen && !min_ttl_.compare_exchange_weak(seen, fresh.granted)) {
    }
  }
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
  Json r = gateway_.call("/v3/kv/range", ops::range_key(key), deadline);
  auto kvs = r.find("kvs");
  if (kvs == r.end() || !kvs->is_array() || kvs->empty()) return std::nullopt;
  return decode_kv((*kvs)[0]);
}

std::vector<KeyValue> EtcdStore::list(const std::string& prefix, Deadline deadline,
                                      std::int64_t* revision) {
  Json r = gateway_.call("/v3/kv/range", ops::range_prefix(prefix), deadline);
  if (revision != nullptr) {
    auto header = r.find("header");
    *revision = header != r.end() && header->is_object() ? int_field(*header, "revision") : 0;
  }
  std::vector<KeyValue> out;
  if (auto kvs = r.find("kvs"); kvs != r.end() && kvs->is_array())
    for (const auto& kv : *kvs) out.push_back(decode_kv(kv));
  return out;
}

std::string EtcdStore::slots_key(std::string_view lock) const {
  return gateway_.config().prefix + "/" + std::string(lock);  // outside the Mutex prefix
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
      if (claim->mine->lease != s.id) {
        if (auto mine = adopt_or_abandon(request, *claim->mine, deadline)) return {std::move(mine)};
        return {};
      }
      claim->lease = Lease{request.lock,
                           request.owner,
                           request.node_id,
                           static_cast<std::uint64_t>(claim->mine->create_revision),
                           0,
                           0,
                           request.ttl,
                           now};
    }
    if (claim->lease) {
      // The key lives as long as the session lease: until (its last refresh's send + TTL) at
      // least, which may come before now + ttl.
      claim->lease->ttl = std::min(request.ttl, covered(s.sent, s.granted, now));
      return {std::move(claim->lease)};
    }
    for (const KeyValue& kv : claim->seen.keys)  // ours: a retry after an unknown outcome
      if (owner_of(kv) == request.owner)
        if (auto mine = adopt_or_abandon(request, kv, deadline)) return {std::move(mine)};
    refuse_other_shape(request, claim->seen);
    return {};
  }
}

// `kv` is this owner's holder key: the same token and slot, its server expiry reset by a renew.
std::optional<Lease> EtcdStore::adopt(const LeaseRequest& request, const KeyValue& kv,
                                      Deadline deadline) {
  const auto slot = slot_of(std::string_view(kv.key).substr(lock_prefix(request.lock).size()));
  if (request.slots >= 1 ? !slot || *slot >= request.slots : slot.has_value())
    return std::nullopt;  // held in another shape: the shape check reports it
  Lease lease{request.lock,     request.owner,
              request.node_id,  static_cast<std::uint64_t>(kv.create_revision),
              slot.value_or(0), request.slots,
              request.ttl,      steady_now()};
  const Renewal renewed = renew(lease, request.ttl, deadline);
  if (renewed.status != LeaseStatus::ok) return std::nullopt;
  lease.ttl = renewed.ttl;
  return lease;
}

// An adoption that fails leaves the owner's key on a session this store may keep alive, claimed
// by nobody unless the caller asks again.
std::optional<Lease> EtcdStore::adopt_or_abandon(const LeaseRequest& request, const KeyValue& kv,
                                                 Deadline deadline) {
  try {
    return adopt(request, kv, deadline);
  } catch (const BackendError&) {
    abandon_sessions();  // the key exists: on failure nobody may claim it (the caller gave up)
    throw;
  }
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
    claim.lease = Lease{request.lock, request.owner, request.node_id, 0, 0, 0, request.ttl, sent};
    claim.lease->fencing_token =
        static_cast<std::uint64_t>(int_field((*reply)["header"], "revision"));
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
    Json v = Json::parse(holder.value, nullptr, /*allow_exceptions=*/false);
    auto n = v.is_object() ? v.find("slots") : v.end();
    const int recorded = n != v.end() && n->is_number_integer() ? n->get<int>() : 0;
    held = seen.slots.value_or(recorded >= 1 ? recorded : std::max(request.slots, 1));
  }
  if (held == request.slots) return;
  throw detail::group_size_mismatch("etcd", request.lock, held, request.slots);
}

// ---- renew / release ---------------------------------------------------------------------------

namespace {
// A key written by versions before session leases sat on a lease of its own, whose id came from
// its owner token: once the key has left it, that lease carries nothing.
bool own_lease_of_old_version(const KeyValue& prev) {
  return prev.lease != 0 && prev.lease == lease_id_for_owner(owner_of(prev));
}
}  // namespace

std::optional<bool> EtcdStore::move_key(const std::string& key, std::int64_t create_revision,
                                        std::int64_t lease, Deadline deadline) {
  Json txn = ops::txn(Json::array({ops::create_revision_is(key, create_revision)}),
                      Json::array({{{"request_put", ops::move_to_lease(key, lease)}}}));
  std::optional<Json> reply = txn_on_lease(txn, deadline);
  if (!reply) return std::nullopt;
  if (!txn_succeeded(*reply)) return false;
  if (auto prev = first_kv(*reply, "response_put", "prev_kv");
      prev && prev->lease != lease && own_lease_of_old_version(*prev))
    revoke_quietly(prev->lease, deadline);
  return true;
}

// The key moves to this store's session of `ttl`, kept alive or granted after `start` (within
// this call): the server then holds it at least `ttl` from `start`. The create revision, thus the
// token, is unchanged (a Put with ignore_value).
Renewal EtcdStore::move_to_session(const std::string& key, std::int64_t create_revision,
                                   Duration ttl, TimePoint start, Deadline deadline) {
  const std::int64_t want = ttl_seconds(ttl.count());
  for (int attempt = 0;; ++attempt) {
    const Session s = ensure(want, ttl, start, deadline, start);
    const std::optional<bool> moved = move_key(key, create_revision, s.id, deadline);
    if (!moved) {
      drop(want, s.id);
      if (attempt == 0) continue;
      throw BackendError(ErrorCode::unavailable, "etcd",
                         "the session lease of " + std::to_string(want) +
                             " s was gone on the server twice in one renewal");
    }
    if (!*moved) return {};
    return {LeaseStatus::ok, std::min(ttl, covered(s.sent, s.granted, start))};
  }
}

Renewal EtcdStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  retry_leaving(deadline);
  return renew_from(lease, ttl, steady_now(), deadline);
}

// Keep-alive first, verify second: a key seen on the session after its keep-alive was applied
// lives at least that keep-alive's TTL from its send, which is after `start`.
Renewal EtcdStore::renew_from(const Lease& lease, Duration ttl, TimePoint start,
                              Deadline deadline) {
  const std::string key = holder_key(lease);
  const auto token = static_cast<std::int64_t>(lease.fencing_token);
  const std::int64_t want = ttl_seconds(ttl.count());
  const Session s = current(want);
  std::optional<std::int64_t> kept;  // nullopt: none sent (no session, or it was abandoned)
  if (s.id != 0) {
    const TimePoint sent = steady_now();
    kept = keep_alive(s.id, deadline);
    if (kept && *kept > 0)
      refreshed(want, s.id, *kept, sent);
    else if (kept)
      drop(want, s.id);
  }
  auto kv = get(key, deadline);
  if (!kv || kv->create_revision != token || kv->lease == 0) return {};
  if (kept && kv->lease == s.id) {
    if (*kept <= 0) return {};
    return {LeaseStatus::ok, std::min<Duration>(ttl, std::chrono::seconds(*kept))};
  }
  // On another lease: a session of another ttl (extend(), a shorter renew), another store
  // object's session, a min_lease_time lease, a session this store abandoned, or this ttl has no
  // session here yet. A keep-alive restores a lease's own TTL only, so the key moves to our
  // session of the ttl asked.
  return move_to_session(key, token, ttl, start, deadline);
}

std::vector<BatchRenewal> EtcdStore::renew_batch(std::span<const RenewalRequest> requests,
                                                 Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  if (requests.empty()) return out;
  const TimePoint start = steady_now();
  retry_leaving(deadline);  // a place in line left behind must not outlive its waiter
  const auto not_sent = [&](std::size_t i) {
    out[i].error = BackendError(ErrorCode::deadline_exceeded, "etcd",
                                "renew_batch: deadline passed before this lease was sent");
  };
  // The leases by the session of their ttl: their keys are on it unless moved (checked below).
  struct Group {
    Session s;
    std::int64_t kept = 0;
    std::optional<BackendError> error;
  };
  std::map<std::int64_t, Group> groups;
  std::vector<std::int64_t> want(requests.size());
  std::vector<std::size_t> verify;
  std::vector<std::size_t> single;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    want[i] = ttl_seconds(requests[i].ttl.count());
    auto it = groups.find(want[i]);
    if (it == groups.end()) it = groups.emplace(want[i], Group{current(want[i]), 0, {}}).first;
    (it->second.s.id != 0 ? verify : single).push_back(i);
  }
  // 1. One keep-alive per session: it renews every key on it at once.
  for (auto& [ttl_s, g] : groups) {
    if (g.s.id == 0) continue;
    if (deadline.expired()) {
      g.error = BackendError(ErrorCode::deadline_exceeded, "etcd",
                             "renew_batch: deadline passed before this lease was sent");
      continue;
    }
    try {
      const TimePoint sent = steady_now();
      const std::optional<std::int64_t> kept = keep_alive(g.s.id, deadline);
      if (!kept) {  // abandoned meanwhile: its keys move to a new session (renew_from)
        g.s.id = 0;
        continue;
      }
      g.kept = *kept;
      if (g.kept > 0)
        refreshed(ttl_s, g.s.id, g.kept, sent);
      else
        drop(ttl_s, g.s.id);  // revoked or expired: its keys are gone with it
    } catch (const BackendError& e) {
      g.error = e;  // unknown outcome for exactly the leases it covered
    }
  }
  std::erase_if(verify, [&](std::size_t i) {
    const Group& g = groups.at(want[i]);
    if (g.error)
      out[i].error = g.error;
    else if (g.s.id == 0)
      single.push_back(i);
    return g.error.has_value() || g.s.id == 0;
  });
  // 2. Every key checked after the keep-alives: first one compare-only Txn per chunk (each key's
  // create revision is its token and it is on its session: all of them ok in one tiny reply),
  // and only a chunk whose compares failed read back, Range ops in one Txn, to tell which lease
  // is lost, moved or still ok.
  std::string body;  // the compare-only Txn, as text (ops::append_equal_compare)
  const auto all_on_session = [&](std::span<const std::size_t> chunk) -> std::optional<bool> {
    body.assign(R"({"compare":[)");
    for (std::size_t i : chunk) {
      const std::string key = base64_encode(holder_key(*requests[i].lease));
      const Group& g = groups.at(want[i]);
      if (g.kept <= 0) return false;  // lost with its session: the reads say which
      if (body.back() != '[') body += ',';
      ops::append_equal_compare(body, key, "CREATE", "create_revision",
                                static_cast<std::int64_t>(requests[i].lease->fencing_token));
      body += ',';
      ops::append_equal_compare(body, key, "LEASE", "lease", g.s.id);
    }
    body += R"(],"success":[],"failure":[]})";
    Reply r = gateway_.post_text("/v3/kv/txn", body, deadline);
    if (!r.ok() && too_many_ops(r)) return std::nullopt;
    if (!r.ok()) gateway_.fail(r, "/v3/kv/txn");
    return txn_succeeded(r.body);
  };
  // A server refused `limit` ops in one Txn: half as many from now on (unless already changed).
  const auto halve = [&](std::size_t limit) {
    std::size_t seen = limit;
    verify_chunk_.compare_exchange_strong(seen, limit / 2);
  };
  for (std::size_t pos = 0; pos < verify.size();) {
    const std::size_t limit = verify_chunk_.load();
    const std::size_t n = std::min(std::max<std::size_t>(limit / 2, 1), verify.size() - pos);
    const auto chunk = std::span(verify).subspan(pos, n);
    if (deadline.expired()) {
      for (std::size_t i : chunk) not_sent(i);
      pos += n;
      continue;
    }
    std::optional<bool> quiet;
    try {
      quiet = all_on_session(chunk);
      if (!quiet && limit > 1) {  // two compares per key: a server with a lower --max-txn-ops
        halve(limit);
        continue;
      }
    } catch (const BackendError& e) {
      for (std::size_t i : chunk) out[i].error = e;
      pos += n;
      continue;
    }
    if (quiet && *quiet) {
      for (std::size_t i : chunk)
        out[i].renewal = {
            LeaseStatus::ok,
            std::min<Duration>(requests[i].ttl, std::chrono::seconds(groups.at(want[i]).kept))};
      pos += n;
      continue;
    }
    if (deadline.expired()) {
      for (std::size_t i : chunk) not_sent(i);
      pos += n;
      continue;
    }
    Json reads = Json::array();
    for (std::size_t i : chunk)
      reads.push_back({{"request_range", ops::range_key(holder_key(*requests[i].lease), true)}});
    Reply r;
    try {
      r = gateway_.post("/v3/kv/txn", ops::txn(Json::array(), std::move(reads)), deadline);
      if (!r.ok() && too_many_ops(r) && limit > 1) {  // a server with a lower --max-txn-ops
        halve(limit);
        continue;
      }
      if (!r.ok()) gateway_.fail(r, "/v3/kv/txn");
    } catch (const BackendError& e) {
      for (std::size_t i : chunk) out[i].error = e;
      pos += n;
      continue;
    }
    const Json none = Json::object();
    const auto rs = r.body.find("responses");
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t i = chunk[j];
      std::optional<KeyValue> kv;
      if (rs != r.body.end() && rs->is_array() && j < rs->size() && (*rs)[j].is_object()) {
        const Json range = (*rs)[j].value("response_range", none);
        if (auto kvs = range.find("kvs"); kvs != range.end() && kvs->is_array() && !kvs->empty())
          kv = decode_kv((*kvs)[0]);
      }
      const Group& g = groups.at(want[i]);
      const auto token = static_cast<std::int64_t>(requests[i].lease->fencing_token);
      if (!kv || kv->create_revision != token || kv->lease == 0) continue;  // lost
      if (kv->lease != g.s.id) {
        single.push_back(i);  // on another lease: renew() moves it
      } else if (g.kept > 0) {
        out[i].renewal = {LeaseStatus::ok,
                          std::min<Duration>(requests[i].ttl, std::chrono::seconds(g.kept))};
      }  // else lost with its session
    }
    pos += n;
  }
  // 3. The rest one by one, as renew() (dated from this call's start).
  for (std::size_t i : single) {
    if (deadline.expired()) {
      not_sent(i);
      continue;
    }
    try {
      out[i].renewal = renew_from(*requests[i].lease, requests[i].ttl, start, deadline);
    } catch (const BackendError& e) {
      out[i].error = e;
    }
  }
  return out;
}

LeaseStatus EtcdStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  try {
    return release_key(lease, keep_for, deadline);
  } catch (const BackendError&) {
    // Issue 37: whatever failed, the key may still be there, on a session that the renewals of
    // this store's other keys keep alive, and nobody claims it any more: that session must
    // expire (and the holder's process may go on working for hours).
    abandon_sessions();
    throw;
  }
}

LeaseStatus EtcdStore::release_key(const Lease& lease, Duration keep_for, Deadline deadline) {
  const std::string key = holder_key(lease);
  const auto token = static_cast<std::int64_t>(lease.fencing_token);
  if (keep_for > Duration{0}) {
    // A lease of its own, not a session: held at least keep_for from now, then freed.
    const std::int64_t fresh = grant(0, ttl_seconds(keep_for.count()), deadline);
    std::optional<bool> moved;
    try {
      moved = move_key(key, token, fresh, deadline);
    } catch (const BackendError&) {
      revoke_quietly(fresh, deadline);  // if it moved, this frees it
      throw;
    }
    if (moved && *moved) return LeaseStatus::ok;
    revoke_quietly(fresh, deadline);
    if (!moved)
      throw BackendError(ErrorCode::unavailable, "etcd",
                         "the lease granted for keep_for was gone before the key moved to it");
    return LeaseStatus::lost;
  }
  // One Txn: delete the key only if still ours. Its session lease stays for the other keys.
  Json txn = ops::txn(Json::array({ops::create_revision_is(key, token)}),
                      Json::array({{{"request_delete_range", ops::delete_key(key)}}}));
  Json reply = gateway_.call("/v3/kv/txn", txn, deadline);
  if (!txn_succeeded(reply)) return LeaseStatus::lost;
  auto prev = first_kv(reply, "response_delete_range", "prev_kvs");
  if (!prev) return LeaseStatus::lost;
  if (own_lease_of_old_version(*prev)) revoke_quietly(prev->lease, deadline);
  return LeaseStatus::ok;
}

}  // namespace leader::etcd
