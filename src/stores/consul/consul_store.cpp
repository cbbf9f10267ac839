#include "consul_store.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "leader/detail/group_size.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"

namespace leader::consul {
namespace {

using Json = nlohmann::json;

/// Optimistic rounds of one try_acquire when another acquisition of the same lock won the
/// fence's check-and-set in between (not contention: a slot may still be free).
constexpr int kClaimRounds = 8;

std::uint64_t flags_for(int slots) { return slots == 0 ? kLockFlag : 0; }

}  // namespace

std::string encode_holder(const HolderValue& v) {
  return Json{{"owner", v.owner},
              {"node_id", v.node_id},
              {"slots", v.slots},
              {"token", v.token},
              {"ttl_ms", v.ttl.count()}}
      .dump();
}

std::optional<HolderValue> decode_holder(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto owner = j.find("owner");
  auto token = j.find("token");
  if (owner == j.end() || !owner->is_string() || token == j.end() || !token->is_number_unsigned())
    return std::nullopt;
  HolderValue v;
  v.owner = owner->get<std::string>();
  v.token = token->get<std::uint64_t>();
  if (auto n = j.find("node_id"); n != j.end() && n->is_string()) v.node_id = n->get<std::string>();
  if (auto s = j.find("slots"); s != j.end() && s->is_number_integer()) v.slots = s->get<int>();
  if (auto t = j.find("ttl_ms"); t != j.end() && t->is_number_integer())
    v.ttl = Duration{t->get<Duration::rep>()};
  return v;
}

std::optional<int> slot_of(std::string_view name) {
  if (name == ".lock") return -1;
  constexpr std::string_view kSlot = ".slot-";
  if (!name.starts_with(kSlot)) return std::nullopt;
  name.remove_prefix(kSlot.size());
  int slot = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), slot);
  if (ec != std::errc() || p != name.data() + name.size() || slot < 0) return std::nullopt;
  return slot;
}

std::uint64_t next_token(const LockView& view) {
  if (view.fence) {
    Json j = Json::parse(view.fence->value, nullptr, /*allow_exceptions=*/false);
    auto t = j.is_object() ? j.find("token") : j.end();
    if (t != j.end() && t->is_number_unsigned()) return t->get<std::uint64_t>() + 1;
    return std::max(view.fence->modify_index, view.index) + 1;  // unreadable: never below
  }
  return view.index + 1;
}

void check_shape(const LockView& view, const std::string& lock, int slots) {
  for (const Holding& h : view.keys) {
    if (!h.live()) continue;
    // A key this store did not write (`consul lock`) on `.lock` is a single leader.
    const int held = h.value ? h.value->slots : (h.slot < 0 ? 0 : -1);
    if (held >= 0 && held != slots) throw detail::group_size_mismatch("consul", lock, held, slots);
  }
}

ConsulStore::ConsulStore(const Config& config) : api_(config) {}

std::string ConsulStore::lock_path(std::string_view lock) const {
  std::string path = api_.config().prefix + "/" + std::string(lock);
  std::replace(path.begin(), path.end(), ':', '/');  // the tenant separator becomes a folder
  return path;
}

std::string ConsulStore::holder_key(std::string_view lock, int slots, int slot) const {
  if (slots == 0) return lock_path(lock) + "/.lock";
  return lock_path(lock) + "/.slot-" + std::to_string(slot);
}

Duration ConsulStore::session_ttl(Duration asked) const {
  return std::max(asked, api_.config().session_ttl_min);
}

Duration ConsulStore::lock_delay_for(Duration ttl) const {
  return api_.config().lock_delay.value_or(std::min<Duration>(ttl, std::chrono::seconds(60)));
}

Duration ConsulStore::granted_for(Duration ttl, Duration session_ttl) const {
  const Duration delay = lock_delay_for(session_ttl);
  // lock_delay=0s is the explicit opt-out (README.md): the TTL, unprotected against an early
  // invalidation.
  return delay > Duration{0} ? std::min(ttl, delay) : ttl;
}

std::string ConsulStore::new_session(const std::string& name, Duration ttl, Duration lock_delay,
                                     Deadline deadline) {
  return api_.create_session({name.substr(0, 200), ttl, lock_delay, false}, deadline);
}

LockView ConsulStore::read(std::string_view lock, Deadline deadline) {
  return view_of(lock, api_.list(lock_path(lock) + "/", deadline));
}

LockView ConsulStore::view_of(std::string_view lock, Tree tree) const {
  const std::string base = lock_path(lock) + "/";
  LockView view;
  view.index = tree.index;
  for (Entry& e : tree.entries) {
    if (e.key.size() <= base.size() || e.key.find('/', base.size()) != std::string::npos)
      continue;  // a deeper key: another lock ("a:b" under "a") or candidates
    const std::string name = e.key.substr(base.size());
    if (name == ".fence") {
      view.fence = std::move(e);
    } else if (auto slot = slot_of(name)) {
      Holding h{std::move(e), *slot, std::nullopt};
      h.value = decode_holder(h.entry.value);
      view.keys.push_back(std::move(h));
    }
  }
  return view;
}

Acquired ConsulStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  std::string session;
  bool delayed = false;
  try {
    for (int round = 0; round < kClaimRounds && !deadline.expired(); ++round) {
      LockView view = read(request.lock, deadline);
      for (const Holding& h : view.keys)
        if (h.live() && h.value && h.value->owner == request.owner)
          if (auto mine = adopt(request, h, deadline)) {
            api_.destroy_quietly(session, deadline);
            return {std::move(mine)};
          }
      check_shape(view, request.lock, request.slots);
      if (auto lease = claim(request, view, session, deadline, delayed)) return {std::move(lease)};
      if (session.empty() || delayed) break;  // full, or held back by a lock-delay
    }
  } catch (...) {
    api_.destroy_quietly(session, deadline);
    throw;
  }
  api_.destroy_quietly(session, deadline);
  return {};
}

// One optimistic claim: the lowest free key and the fence's counter in one transaction. Leaves
// `session` empty when nothing was free (contention); sets `delayed` on a lock-delay refusal.
std::optional<Lease> ConsulStore::claim(const LeaseRequest& request, const LockView& view,
                                        std::string& session, Deadline deadline, bool& delayed) {
  int slot = request.slots == 0 ? -1 : 0;
  std::optional<Entry> lock_key;  // a group also checks `.lock`: `consul lock` does not bump .fence
  for (const Holding& h : view.keys)
    if (h.slot < 0) lock_key = h.entry;
  auto live = [&](int s) {
    return std::any_of(view.keys.begin(), view.keys.end(),
                       [&](const Holding& h) { return h.slot == s && h.live(); });
  };
  if (request.slots >= 1)
    while (slot < request.slots && live(slot)) ++slot;
  if (request.slots == 0 ? live(-1) : slot == request.slots) {  // full: contention
    api_.destroy_quietly(session, deadline);
    session.clear();
    return std::nullopt;
  }
  const Duration ttl = session_ttl(request.ttl);
  if (session.empty())
    session = new_session("leader: " + request.lock + " for " + request.node_id, ttl,
                          lock_delay_for(ttl), deadline);
  const std::uint64_t token = next_token(view);
  const HolderValue value{request.owner, request.node_id, request.slots, token, ttl};
  const std::string fence = lock_path(request.lock) + "/.fence";
  const std::string key = holder_key(request.lock, request.slots, std::max(slot, 0));
  Json ops = Json::array();
  ops.push_back(kv_op("cas", fence, Json{{"token", token}}.dump(), 0,
                      view.fence ? view.fence->modify_index : 0));
  if (request.slots >= 1)
    ops.push_back(lock_key ? kv_op("check-index", lock_key->key, "", 0, lock_key->modify_index)
                           : kv_op("check-not-exists", lock_path(request.lock) + "/.lock"));
  ops.push_back(kv_op("lock", key, encode_holder(value), flags_for(request.slots), 0, session));
  TxnResult r = api_.txn(ops, deadline);
  if (!r.committed) {
    delayed = r.errors.find("lock delay") != std::string::npos;
    if (r.errors.find("invalid session") != std::string::npos) session.clear();  // expired: anew
    return std::nullopt;
  }
  return Lease{request.lock,      request.owner, request.node_id,       token,
               std::max(slot, 0), request.slots, granted_for(ttl, ttl), TimePoint{}};
}

// `mine` holds this owner's key: the same token and slot, its session renewed to the asked ttl.
std::optional<Lease> ConsulStore::adopt(const LeaseRequest& request, const Holding& mine,
                                        Deadline deadline) {
  if (mine.value->slots != request.slots) return std::nullopt;  // the shape check reports it
  Lease lease{request.lock,           request.owner, request.node_id, mine.value->token,
              std::max(mine.slot, 0), request.slots, request.ttl,     TimePoint{}};
  Renewed r = renew_lease(lease, request.ttl, deadline);
  if (!r.ok) return std::nullopt;
  lease.ttl = r.ttl;
  return lease;
}

std::optional<Holding> ConsulStore::own_key(const Lease& lease, Deadline deadline) {
  auto e = api_.get(holder_key(lease.lock, lease.slots, lease.slot), deadline);
  if (!e || e->session.empty()) return std::nullopt;
  auto v = decode_holder(e->value);
  if (!v || v->owner != lease.owner || v->token != lease.fencing_token) return std::nullopt;
  return Holding{std::move(*e), lease.slots == 0 ? -1 : lease.slot, std::move(v)};
}

ConsulStore::Renewed ConsulStore::renew_lease(const Lease& lease, Duration ttl, Deadline deadline) {
  auto mine = own_key(lease, deadline);
  if (!mine) return {};
  const Duration want = session_ttl(ttl);
  if (want != mine->value->ttl)
    return move_to_new_session(lease, mine->entry, *mine->value, want, deadline);
  auto granted = api_.renew_session(mine->entry.session, deadline);
  if (!granted) return {};
  return {true, granted_for(*granted, mine->value->ttl)};
}

// A session's TTL cannot change: a renew or keep_for with another ttl moves the key to a new
// session in one transaction (unlock by the old one, lock by the new one), then ends the old one.
ConsulStore::Renewed ConsulStore::move_to_new_session(const Lease& lease, const Entry& held,
                                                      HolderValue value, Duration ttl,
                                                      Deadline deadline) {
  const std::string fresh = new_session("leader: " + lease.lock + " for " + lease.node_id, ttl,
                                        lock_delay_for(ttl), deadline);
  value.ttl = ttl;
  const std::uint64_t flags = flags_for(lease.slots);
  Json ops = Json::array({kv_op("unlock", held.key, held.value, flags, 0, held.session),
                          kv_op("lock", held.key, encode_holder(value), flags, 0, fresh)});
  // No destroy of `fresh` when the outcome is unknown: the move may have committed, and ending
  // the session that now holds the key would free it before the holder's deadline.
  TxnResult r = api_.txn(ops, deadline);
  if (!r.committed) {
    api_.destroy_quietly(fresh, deadline);
    return {};
  }
  api_.destroy_quietly(held.session, deadline);  // holds nothing now: no lock-delay
  return {true, granted_for(ttl, ttl)};
}

Renewal ConsulStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  Renewed r = renew_lease(lease, ttl, deadline);
  if (!r.ok) return {};
  return {LeaseStatus::ok, r.ttl};
}

LeaseStatus ConsulStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  auto mine = own_key(lease, deadline);
  if (!mine) return LeaseStatus::lost;
  if (keep_for > Duration{0}) {
    // Held by a session of TTL keep_for that nobody renews; it never ends before keep_for.
    return move_to_new_session(lease, mine->entry, *mine->value, session_ttl(keep_for), deadline).ok
               ? LeaseStatus::ok
               : LeaseStatus::lost;
  }
  // Release first, then destroy: a destroy of a session that still holds the key would start
  // the key's lock-delay (reference section 1).
  bool ok = false;
  try {
    ok = api_.release(mine->entry.key, mine->entry.session, flags_for(lease.slots), "", deadline);
  } catch (const BackendError&) {
    // Outcome unknown: the session is ended anyway (this holder is done with it), so the key
    // is free after the session's lock-delay instead of after up to twice its TTL. Nothing
    // else renews this session: each lease has its own (README.md, "Sessions are never shared").
    api_.destroy_quietly(mine->entry.session, Deadline::after(std::chrono::seconds(1)));
    throw;
  }
  api_.destroy_quietly(mine->entry.session, deadline);
  return ok ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState ConsulStore::inspect(std::string_view lock, Deadline deadline) {
  return state_of(lock, read(lock, deadline));
}

LockState ConsulStore::watch(std::string_view lock, const LockState& last_seen, Deadline deadline,
                             const std::stop_token& stop) {
  validate_lock_name(lock);
  LockView view = read(lock, deadline);
  for (;;) {
    LockState now = state_of(lock, view);
    // Index 0 would not block (an index reset): the caller re-reads later.
    if (!same_holders(now, last_seen) || view.index == 0) return now;
    const Duration left = deadline.remaining();
    if (left < std::chrono::milliseconds(10) || stop.stop_requested()) return now;
    // Consul may answer up to wait/16 late: ask for 15/16 of the time left, and leave the HTTP
    // call a second more than that so the answer can come.
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(left * 15 / 16);
    auto tree = api_.list_after(lock_path(lock) + "/", view.index, wait,
                                Deadline::after(left + std::chrono::seconds(1)), stop);
    if (!tree) return now;
    const std::uint64_t before = view.index;
    view = view_of(lock, std::move(*tree));
    if (view.index == before && deadline.expired()) return state_of(lock, view);
  }
}

LockState ConsulStore::state_of(std::string_view lock, const LockView& view) {
  LockState state{std::string(lock), {}};
  for (const Holding& h : view.keys) {
    if (!h.live()) continue;
    Holder out;
    out.slot = std::max(h.slot, 0);
    if (h.value) {
      out.node_id = h.value->node_id;
      out.owner = h.value->owner;
      out.fencing_token = h.value->token;
      out.expires_in = std::max(h.value->ttl, Duration{0});
    } else {
      out.node_id = "session " + h.entry.session;  // `consul lock` or another Consul client
      out.fencing_token = h.entry.modify_index;
    }
    state.holders.push_back(std::move(out));
  }
  std::sort(state.holders.begin(), state.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
  return state;
}

std::vector<LockState> ConsulStore::list_locks(std::string_view prefix, Deadline deadline) {
  std::string root = api_.config().prefix + "/";
  std::replace(root.begin(), root.end(), ':', '/');  // as lock_path() spells it
  std::string start = root + std::string(prefix);
  std::replace(start.begin(), start.end(), ':', '/');
  std::set<std::string> names;
  for (const Entry& e : api_.list(start, deadline).entries) {
    const auto last = e.key.rfind('/');
    if (last == std::string::npos || last < root.size()) continue;
    const std::string leaf = e.key.substr(last + 1);
    if (leaf != ".lock" && leaf.rfind(".slot-", 0) != 0) continue;  // fence, candidates, foreign
    std::string name = e.key.substr(root.size(), last - root.size());
    std::replace(name.begin(), name.end(), '/', ':');
    names.insert(std::move(name));
  }
  return detail::held_locks(*this, names, deadline);
}

}  // namespace leader::consul
