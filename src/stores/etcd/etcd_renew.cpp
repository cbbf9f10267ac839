// Renewals (one lease, or a batch: README.md "Batched renewals") and releases: a key keeps its
// create revision (the fencing token) and moves between leases with Puts that ignore its value.

#include <algorithm>

#include "clients/etcd/codec.hpp"
#include "clients/etcd/ops.hpp"
#include "etcd_store.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

// A key written by versions before session leases sat on a lease of its own, whose id came from
// its owner token: once the key has left it, that lease carries nothing.
bool own_lease_of_old_version(const KeyValue& prev) {
  return prev.lease != 0 && prev.lease == lease_id_for_owner(owner_of(prev));
}

bool too_many_ops(const Reply& r) {
  return r.message.find("too many operations") != std::string::npos;
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
  const BackendError late(ErrorCode::deadline_exceeded, "etcd",
                          "renew_batch: deadline passed before this lease was sent");
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
      g.error = late;
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
  // One chunk: its leases' results in `out` (or queued in `single`); false when the server
  // refused `limit` ops in one Txn (a lower --max-txn-ops: two compares per key), nothing set.
  const auto check = [&](std::span<const std::size_t> chunk, std::size_t limit) {
    if (deadline.expired()) throw late;
    const std::optional<bool> quiet = all_on_session(chunk);
    if (!quiet && limit > 1) return false;
    if (quiet && *quiet) {
      for (std::size_t i : chunk)
        out[i].renewal = {
            LeaseStatus::ok,
            std::min<Duration>(requests[i].ttl, std::chrono::seconds(groups.at(want[i]).kept))};
      return true;
    }
    if (deadline.expired()) throw late;
    Json reads = Json::array();
    for (std::size_t i : chunk)
      reads.push_back({{"request_range", ops::range_key(holder_key(*requests[i].lease), true)}});
    const Reply r =
        gateway_.post("/v3/kv/txn", ops::txn(Json::array(), std::move(reads)), deadline);
    if (!r.ok() && too_many_ops(r) && limit > 1) return false;
    if (!r.ok()) gateway_.fail(r, "/v3/kv/txn");
    std::vector<std::vector<KeyValue>> found;  // all decoded before any result is set
    for (std::size_t j = 0; j < chunk.size(); ++j) found.push_back(range_kvs(r.body, j));
    for (std::size_t j = 0; j < chunk.size(); ++j) {
      const std::size_t i = chunk[j];
      const KeyValue* kv = found[j].empty() ? nullptr : &found[j].front();
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
    return true;
  };
  for (std::size_t pos = 0; pos < verify.size();) {
    const std::size_t limit = verify_chunk_.load();
    const std::size_t n = std::min(std::max<std::size_t>(limit / 2, 1), verify.size() - pos);
    const auto chunk = std::span(verify).subspan(pos, n);
    try {
      if (!check(chunk, limit)) {  // half as many from now on (unless already changed)
        std::size_t seen = limit;
        verify_chunk_.compare_exchange_strong(seen, limit / 2);
        continue;
      }
    } catch (const BackendError& e) {
      for (std::size_t i : chunk) out[i].error = e;
    }
    pos += n;
  }
  // 3. The rest one by one, as renew() (dated from this call's start).
  for (std::size_t i : single) {
    if (deadline.expired()) {
      out[i].error = late;
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
    // Whatever failed, the key may still be there, on a session that the renewals of
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
    const std::int64_t fresh = grant(ttl_seconds(keep_for.count()), deadline).id;
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
