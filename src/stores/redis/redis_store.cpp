#include "redis_store.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/stores/redis.hpp"
#include "replies.hpp"

namespace leader::redis {
namespace {

std::string scheme_of(const Config& c) {
  if (c.sentinel()) return "redis-sentinel";
  if (c.cluster()) return "redis-cluster";
  switch (c.transport) {
    case Transport::tls:
      return "rediss";
    case Transport::unix_socket:
      return "unix";
    default:
      return "redis";
  }
}

// inspect() reads at most this many group slots.
constexpr int kMaxInspectedSlots = 100000;

std::string ms(Duration d) { return std::to_string(d.count()); }

std::string describe_size(int slots) {
  return slots == 0 ? "a single leader" : "a group of " + std::to_string(slots) + " slots";
}

std::string size_mismatch(const std::string& lock, int held_as, int asked) {
  return "lock '" + lock + "' is held as " + describe_size(held_as) + "; this request asks for " +
         describe_size(asked);
}

// The acquire script's keys for `r` declaring `declared` slot keys, and its arguments: what
// try_acquire and try_acquire_async both send.
std::vector<std::string> acquire_keys(const RedisStore& store, const LeaseRequest& r,
                                      int declared) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<std::size_t>(declared) + 2);
  for (int i = 0; i < declared; ++i) keys.push_back(store.slot_key(r.lock, i));
  keys.push_back(store.fence_key(r.lock));
  keys.push_back(store.slots_key(r.lock));
  return keys;
}

std::vector<std::string> acquire_args(const RedisStore& store, const LeaseRequest& r) {
  return {r.owner, r.node_id, ms(r.ttl), std::to_string(r.slots), store.changes_channel(r.lock)};
}

}  // namespace

RedisStore::RedisStore(Config config) : scheme_(scheme_of(config)), pool_(std::move(config)) {
  if (pool_.config().cluster()) cluster_ = std::make_unique<Cluster>(pool_.config());
}

ConnectionPool& RedisStore::pool_for(const std::string& key, Deadline deadline) {
  if (!cluster_) return pool_;
  return cluster_->pool_for_slot(key_slot(key), deadline);
}

Reply RedisStore::routed(
    const std::string& key, Deadline deadline,
    const std::function<Reply(ConnectionPool&, Connection&, Deadline, bool asking)>& use) {
  ConnectionPool* pool = &pool_for(key, deadline);
  bool asking = false;
  for (int redirects = 0;; ++redirects) {
    Reply reply;
    try {
      pool->run(deadline, [&](Connection& c, Deadline d) { reply = use(*pool, c, d, asking); });
    } catch (const BackendError& e) {
      // The slot's owner is dead, paused or cut off: maybe a cluster failover. The call's outcome
      // there is unknown, so it is not replayed elsewhere; the next call reads the slot map again.
      if (cluster_ &&
          (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded))
        cluster_->forget();
      throw;
    }
    const std::string text = error_text(reply.get());
    if (cluster_ && text.rfind("CLUSTERDOWN", 0) == 0) cluster_->forget();
    const bool moved = text.rfind("MOVED ", 0) == 0;
    if (!cluster_ || redirects >= 3 || !(moved || text.rfind("ASK ", 0) == 0)) return reply;
    // "MOVED <slot> <host:port>" / "ASK <slot> <host:port>": the command was not executed.
    const std::string target = text.substr(text.rfind(' ') + 1);
    if (moved) {
      try {
        cluster_->refresh(deadline);
      } catch (const BackendError&) {  // the redirection names the node anyway
      }
    }
    pool = &cluster_->pool_at(target);
    asking = !moved;
  }
}

std::string_view RedisStore::scheme() const { return scheme_; }

std::string RedisStore::slot_key(std::string_view lock, int slot) const {
  std::string key = pool_.config().prefix + std::string(lock);
  if (slot == 0) return key;
  return "{" + key + "}:slot:" + std::to_string(slot);
}

std::string RedisStore::fence_key(std::string_view lock) const {
  return "{" + pool_.config().prefix + std::string(lock) + "}:fence";
}

std::string RedisStore::slots_key(std::string_view lock) const {
  return "{" + pool_.config().prefix + std::string(lock) + "}:slots";
}

std::string RedisStore::changes_channel(std::string_view lock) const {
  return "{" + pool_.config().prefix + std::string(lock) + "}:changed";
}

std::string RedisStore::candidates_key(std::string_view group) const {
  return "{" + pool_.config().prefix + std::string(group) + "}:candidates";
}

namespace {

// True when a script's reply says it changed something (a grant, an owned renew): what a WAIT
// must cover. nil (contention) and 0 (not ours) wrote nothing.
bool wrote(const redisReply* r) {
  if (r == nullptr || r->type == REDIS_REPLY_NIL || r->type == REDIS_REPLY_ERROR) return false;
  return !(r->type == REDIS_REPLY_INTEGER && r->integer == 0);
}

// WAIT for `config.wait_replicas` replicas on `c`, within `d`: the number that acknowledged. The
// write it follows was applied on the primary, so every failure here is an unknown outcome.
int wait_for_replicas(Connection& c, const Config& config, Deadline d) {
  using std::chrono::milliseconds;
  const auto left =
      std::chrono::duration_cast<milliseconds>(d.at() - std::chrono::steady_clock::now());
  const auto timeout = std::max(
      milliseconds(1), std::min(std::chrono::duration_cast<milliseconds>(config.wait_timeout),
                                left - milliseconds(1)));
  Reply r;
  try {
    r = c.call({"WAIT", std::to_string(config.wait_replicas), std::to_string(timeout.count())}, d);
  } catch (const BackendError& e) {
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        std::string("the write was applied on the primary, then WAIT failed: ") + e.what());
  }
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER)
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        "the write was applied on the primary, then WAIT answered " +
            (error_text(r.get()).empty() ? std::string("no integer") : error_text(r.get())));
  return static_cast<int>(r->integer);
}

// Renew's message when too few replicas acknowledged a renewal (`acked` of `wanted`).
BackendError not_replicated_renewal(const Lease& lease, int acked, int wanted) {
  return BackendError(
      ErrorCode::deadline_exceeded, "redis",
      "lock '" + lease.lock + "' was renewed on the primary, but only " + std::to_string(acked) +
          " of the " + std::to_string(wanted) +
          " replicas required (?wait_replicas=) acknowledged within WAIT's timeout: the "
          "renewal is not known to survive a failover (the lease is possibly held until the "
          "previous ttl or the new one)");
}

}  // namespace

Reply RedisStore::eval(const Script& script, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args, Deadline deadline, TimePoint* sent_at,
                       int* acked) {
  if (acked != nullptr) *acked = -1;
  Command cmd;
  cmd.reserve(3 + keys.size() + args.size());
  cmd.insert(cmd.end(), {"EVALSHA", script.sha1, std::to_string(keys.size())});
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  ConnectionPool* used = nullptr;
  Reply reply = routed(keys.empty() ? std::string() : keys.front(), deadline,
                       [&](ConnectionPool& pool, Connection& c, Deadline d, bool asking) {
                         used = &pool;
                         auto send = [&](const Command& what) {
                           if (asking) (void)c.call({"ASKING"}, d);
                           if (sent_at != nullptr) *sent_at = std::chrono::steady_clock::now();
                           return c.call(what, d);
                         };
                         Reply r = send(cmd);
                         if (error_text(r.get()).rfind("NOSCRIPT", 0) == 0) {
                           Command full = cmd;
                           full[0] = "EVAL";
                           full[1] = script.source;
                           r = send(full);
                         }
                         if (acked != nullptr && pool_.config().wait_replicas > 0 && wrote(r.get()))
                           *acked = wait_for_replicas(c, pool_.config(), d);
                         return r;
                       });
  if (auto text = error_text(reply.get()); !text.empty()) {
    if (text.rfind("READONLY", 0) == 0 && used != nullptr) used->forget_primary();  // demoted
    throw_reply_error(text, used != nullptr && !cluster_ ? used->config() : pool_.config(),
                      "a script");
  }
  return reply;
}

Reply RedisStore::command(const Command& cmd, Deadline deadline) {
  ConnectionPool* used = nullptr;
  Reply reply = routed(cmd.size() > 1 ? cmd[1] : std::string(), deadline,
                       [&](ConnectionPool& pool, Connection& c, Deadline d, bool asking) {
                         used = &pool;
                         if (asking) (void)c.call({"ASKING"}, d);
                         return c.call(cmd, d);
                       });
  if (auto text = error_text(reply.get()); !text.empty()) {
    if (text.rfind("READONLY", 0) == 0 && used != nullptr) used->forget_primary();  // demoted
    throw_reply_error(text, used != nullptr && !cluster_ ? used->config() : pool_.config(),
                      cmd.front());
  }
  return reply;
}

Acquired RedisStore::try_acquire(const LeaseRequest& r, Deadline deadline) {
  // Every key a script touches is declared: the request's slots first, and, when the lock was
  // last used with more slots, all of those (the script says so and we ask once more).
  int declared = std::max(1, r.slots);
  for (int attempt = 0; attempt < 2; ++attempt) {
    TimePoint sent_at{};
    int acked = -1;
    Reply reply = eval(acquire_script(), acquire_keys(*this, r, declared), acquire_args(*this, r),
                       deadline, &sent_at, &acked);
    auto granted = decode_acquire(reply.get());
    if (!granted) return {};
    if (granted->slot >= 0) {
      Lease lease{r.lock,        r.owner, r.node_id, granted->fencing_token,
                  granted->slot, r.slots, r.ttl,     sent_at};
      if (acked >= 0 && acked < pool_.config().wait_replicas)
        not_replicated(lease, acked, deadline);
      return {lease};
    }
    if (granted->slot == kHeldAsAnotherSize)
      throw BackendError(ErrorCode::failed_precondition, "redis",
                         size_mismatch(r.lock, granted->size, r.slots));
    declared = std::clamp(granted->size, declared + 1, kMaxInspectedSlots);
  }
  throw BackendError(ErrorCode::internal, "redis",
                     "unexpected reply to acquire (the lock's size changed twice)");
}

bool RedisStore::attempts_async() const noexcept {
  return !cluster_ && pool_.config().wait_replicas == 0;
}

AsyncLane& RedisStore::lane() {
  std::lock_guard lock(lane_mu_);
  if (!lane_) lane_ = std::make_unique<AsyncLane>(pool_);
  return *lane_;
}

AsyncLane::Stats RedisStore::async_stats() const {
  std::lock_guard lock(lane_mu_);
  return lane_ ? lane_->stats() : AsyncLane::Stats{};
}

void RedisStore::try_acquire_async(const LeaseRequest& request, Deadline deadline,
                                   std::function<void(Attempt)> done) {
  if (!attempts_async())
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       "asynchronous attempts need a standalone or Sentinel store without "
                       "?wait_replicas= (attempts_async() is false)");
  submit_acquire(request, std::max(1, request.slots), false, deadline,
                 std::make_shared<std::function<void(Attempt)>>(std::move(done)));
}

void RedisStore::submit_acquire(const LeaseRequest& r, int declared, bool full, Deadline deadline,
                                const std::shared_ptr<std::function<void(Attempt)>>& done) {
  // Exactly the command try_acquire sends (eval()), keys and arguments alike.
  const Script& script = acquire_script();
  const std::vector<std::string> keys = acquire_keys(*this, r, declared);
  const std::vector<std::string> args = acquire_args(*this, r);
  Command cmd{full ? "EVAL" : "EVALSHA", full ? script.source : script.sha1,
              std::to_string(keys.size())};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  std::string channel = changes_channel(r.lock);
  lane().submit(
      std::move(cmd), std::move(channel), deadline,
      [this, r, declared, full, deadline, done](Reply reply, const std::exception_ptr& error,
                                                TimePoint sent, std::uint64_t seen) {
        Attempt a;
        a.seen = seen;
        try {
          if (error) std::rethrow_exception(error);
          const std::string text = error_text(reply.get());
          if (!full && text.rfind("NOSCRIPT", 0) == 0)  // not executed: the source, as eval()
            return submit_acquire(r, declared, true, deadline, done);
          if (!text.empty()) {
            if (text.rfind("READONLY", 0) == 0) pool_.forget_primary();  // demoted
            throw_reply_error(text, pool_.config(), "a script");
          }
          auto granted = decode_acquire(reply.get());
          if (granted && granted->slot >= 0) {
            a.acquired = Acquired{Lease{r.lock, r.owner, r.node_id, granted->fencing_token,
                                        granted->slot, r.slots, r.ttl, sent}};
          } else if (granted && granted->slot == kHeldAsAnotherSize) {
            throw BackendError(ErrorCode::failed_precondition, "redis",
                               size_mismatch(r.lock, granted->size, r.slots));
          } else if (granted) {  // the lock was last a larger group: declare its keys
            if (declared > std::max(1, r.slots))
              throw BackendError(ErrorCode::internal, "redis",
                                 "unexpected reply to acquire (the lock's size changed twice)");
            return submit_acquire(r, std::clamp(granted->size, declared + 1, kMaxInspectedSlots),
                                  full, deadline, done);
          }
        } catch (...) {
          a.error = std::current_exception();
        }
        (*done)(std::move(a));
      });
}

std::uint64_t RedisStore::wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                                      Deadline last, std::uint64_t order,
                                      std::function<void(bool)> woken) {
  return lane().wait(changes_channel(lock), seen, until, last, order, std::move(woken));
}

void RedisStore::cancel_wait(std::uint64_t id) noexcept {
  std::lock_guard lock(lane_mu_);
  if (lane_) lane_->cancel(id);
}

void RedisStore::not_replicated(const Lease& lease, int acked, Deadline deadline) {
  const Config& c = pool_.config();
  std::string what =
      "lock '" + lease.lock + "' was granted on the primary (fencing token " +
      std::to_string(lease.fencing_token) + "), but only " + std::to_string(acked) + " of the " +
      std::to_string(c.wait_replicas) +
      " replicas required (?wait_replicas=) acknowledged it within WAIT's " +
      std::to_string(
          std::chrono::duration_cast<std::chrono::milliseconds>(c.wait_timeout).count()) +
      " ms: a failover could lose it, so it is not reported as held; ";
  try {
    // Released at once (no keep_for), so that a lease nobody uses does not block the lock.
    const Deadline by = deadline.expired() ? Deadline::after(c.command_timeout) : deadline;
    release(lease, Duration{0}, by);
    what += "released";
  } catch (const BackendError& e) {
    what += std::string("its release failed (") + e.what() + "): it expires after its ttl";
  }
  throw BackendError(ErrorCode::deadline_exceeded, "redis", what);
}

Renewal RedisStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  int acked = -1;
  Reply reply =
      eval(renew_script(), {slot_key(lease.lock, lease.slot)},
           {lease.owner, ms(ttl), changes_channel(lease.lock)}, deadline, nullptr, &acked);
  if (!decode_owned(reply.get(), "renew")) return {};
  if (acked >= 0 && acked < pool_.config().wait_replicas)
    throw not_replicated_renewal(lease, acked, pool_.config().wait_replicas);
  return {LeaseStatus::ok, ttl};
}

std::vector<BatchRenewal> RedisStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  if (requests.empty()) return out;
  // The leases by the pool that serves them: the one server, or on a cluster each slot's primary.
  std::vector<std::pair<ConnectionPool*, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ConnectionPool* pool = &pool_;
    if (cluster_) {
      try {
        pool = &pool_for(slot_key(requests[i].lease->lock, requests[i].lease->slot), deadline);
      } catch (const BackendError& e) {  // no slot map: nothing sent for this lease
        out[i].error = e;
        continue;
      }
    }
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == pool; });
    if (g == groups.end()) g = groups.insert(groups.end(), {pool, {}});
    g->second.push_back(i);
  }
  std::vector<std::size_t> redirected;  // MOVED / ASK: not executed there
  bool moved = false;
  for (auto& [pool, indices] : groups)
    for (std::size_t at = 0; at < indices.size(); at += kBatchChunk)
      renew_chunk(*pool, requests,
                  std::span<const std::size_t>(indices).subspan(
                      at, std::min(kBatchChunk, indices.size() - at)),
                  deadline, out, redirected, moved);
  if (redirected.empty()) return out;
  if (moved) {
    try {  // once for all of them, instead of once per renew() below
      cluster_->refresh(deadline);
    } catch (const BackendError&) {  // each renew() follows its redirection anyway
    }
  }
  for (std::size_t i : redirected) {  // resharding: one by one, following the redirections
    if (deadline.expired()) {
      out[i].error = BackendError(ErrorCode::deadline_exceeded, "redis",
                                  "renew_batch: deadline passed before this lease was sent to the "
                                  "node its slot moved to");
      continue;
    }
    try {
      out[i].renewal = renew(*requests[i].lease, requests[i].ttl, deadline);
    } catch (const BackendError& e) {
      out[i].error = e;
    }
  }
  return out;
}

void RedisStore::renew_chunk(ConnectionPool& pool, std::span<const RenewalRequest> requests,
                             std::span<const std::size_t> chunk, Deadline deadline,
                             std::vector<BatchRenewal>& out, std::vector<std::size_t>& redirected,
                             bool& moved) {
  const Config& config = pool_.config();
  const Script& script = renew_script();
  std::vector<Command> commands;  // exactly what renew() sends, one per lease
  commands.reserve(chunk.size());
  for (std::size_t i : chunk) {
    const Lease& lease = *requests[i].lease;
    commands.push_back({"EVALSHA", script.sha1, "1", slot_key(lease.lock, lease.slot), lease.owner,
                        ms(requests[i].ttl), changes_channel(lease.lock)});
  }
  std::vector<Reply> answers;               // answers[k] is commands[k]'s reply; null: none came
  int acked = -1;                           // what WAIT answered; -1 when no WAIT was sent
  std::optional<BackendError> failed;       // the round trip's failure
  std::optional<BackendError> wait_failed;  // WAIT's, after every reply came
  try {
    pool.run(deadline, [&](Connection& c, Deadline d) {
      answers.clear();  // a retry on a fresh connection starts over
      answers.resize(commands.size());
      acked = -1;
      wait_failed.reset();
      auto send = [&](const std::vector<std::size_t>& which, const std::vector<Command>& what) {
        std::vector<Reply> got;
        try {
          c.pipeline(what, got, d);
        } catch (const BackendError&) {
          for (std::size_t j = 0; j < got.size(); ++j) answers[which[j]] = std::move(got[j]);
          throw;
        }
        for (std::size_t j = 0; j < got.size(); ++j) answers[which[j]] = std::move(got[j]);
      };
      std::vector<std::size_t> all(commands.size());
      for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
      send(all, commands);
      // NOSCRIPT (not executed; the server lost its script cache): EVAL, as eval() does.
      std::vector<std::size_t> again;
      std::vector<Command> full;
      for (std::size_t k = 0; k < answers.size(); ++k) {
        if (error_text(answers[k].get()).rfind("NOSCRIPT", 0) != 0) continue;
        again.push_back(k);
        full.push_back(commands[k]);
        full.back()[0] = "EVAL";
        full.back()[1] = script.source;
        answers[k].reset();
      }
      if (!again.empty()) send(again, full);
      if (config.wait_replicas > 0 && std::any_of(answers.begin(), answers.end(),
                                                  [](const Reply& r) { return wrote(r.get()); })) {
        try {  // one WAIT covers every write of this connection so far
          acked = wait_for_replicas(c, config, d);
        } catch (const BackendError& e) {
          wait_failed = e;
          throw;  // the connection is dropped, as after renew()'s failed WAIT
        }
      }
    });
  } catch (const BackendError& e) {
    failed = e;
    // The slot's owner is dead, paused or cut off (maybe a failover): read the slot map again on
    // the next call, as routed() does; nothing is replayed elsewhere.
    if (cluster_ &&
        (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded))
      cluster_->forget();
  }
  answers.resize(commands.size());
  for (std::size_t k = 0; k < chunk.size(); ++k) {
    const std::size_t i = chunk[k];
    const Lease& lease = *requests[i].lease;
    const redisReply* r = answers[k].get();
    if (r == nullptr) {  // sent or not, no answer: what renew() would have thrown
      out[i].error = failed.value_or(
          BackendError(ErrorCode::internal, "redis", "renew_batch: no reply and no error"));
      continue;
    }
    if (const std::string text = error_text(r); !text.empty()) {
      if (cluster_ && (text.rfind("MOVED ", 0) == 0 || text.rfind("ASK ", 0) == 0)) {
        moved = moved || text.rfind("MOVED ", 0) == 0;
        redirected.push_back(i);
        continue;
      }
      if (cluster_ && text.rfind("CLUSTERDOWN", 0) == 0) cluster_->forget();
      if (text.rfind("READONLY", 0) == 0) pool.forget_primary();  // demoted
      try {
        throw_reply_error(text, config, "a script");
      } catch (const BackendError& e) {
        out[i].error = e;
      }
      continue;
    }
    bool owned = false;
    try {
      owned = decode_owned(r, "renew");
    } catch (const BackendError& e) {
      out[i].error = e;
      continue;
    }
    if (!owned) continue;  // lost: Renewal{} as renew() returns it
    if (config.wait_replicas > 0) {
      if (wait_failed) {
        out[i].error = *wait_failed;
        continue;
      }
      if (acked < 0) {  // renewed on the primary, then the connection failed before WAIT
        out[i].error = BackendError(
            ErrorCode::deadline_exceeded, "redis",
            "lock '" + lease.lock +
                "' was renewed on the primary, then the connection failed before WAIT: " +
                (failed ? failed->what() : std::string("no WAIT sent")));
        continue;
      }
      if (acked < config.wait_replicas) {
        out[i].error = not_replicated_renewal(lease, acked, config.wait_replicas);
        continue;
      }
    }
    out[i].renewal = {LeaseStatus::ok, requests[i].ttl};
  }
}

LeaseStatus RedisStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  Reply reply = eval(release_script(), {slot_key(lease.lock, lease.slot)},
                     {lease.owner, ms(keep_for), changes_channel(lease.lock)}, deadline);
  return decode_owned(reply.get(), "release") ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState RedisStore::inspect(std::string_view lock, Deadline deadline) {
  // Every key a script touches is declared, so first read how many slots the lock has used.
  Reply count = command({"GET", slots_key(lock)}, deadline);
  const int slots = decode_slot_count(count.get(), kMaxInspectedSlots);
  std::vector<std::string> keys;
  keys.reserve(static_cast<std::size_t>(slots));
  for (int i = 0; i < slots; ++i) keys.push_back(slot_key(lock, i));
  Reply reply = eval(inspect_script(), keys, {}, deadline);
  return {std::string(lock), decode_inspect(reply.get())};
}

namespace {

// `text` with the glob characters of SCAN's MATCH escaped.
std::string glob_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The lock name a scanned key belongs to (`key_prefix` = the store's prefix + the listing
// prefix), or "" for a key of neither shape; held_locks() skips what is no valid lock name.
std::string lock_of_key(std::string_view key, std::string_view store_prefix,
                        std::string_view key_prefix) {
  constexpr std::string_view kSlotsSuffix = "}:slots";
  std::string name;
  if (key.size() > key_prefix.size() + kSlotsSuffix.size() && key.front() == '{' &&
      key.substr(1, key_prefix.size()) == key_prefix &&
      key.substr(key.size() - kSlotsSuffix.size()) == kSlotsSuffix) {
    name = std::string(key.substr(1 + store_prefix.size(),
                                  key.size() - kSlotsSuffix.size() - 1 - store_prefix.size()));
  } else if (key.substr(0, key_prefix.size()) == key_prefix) {
    name = std::string(key.substr(store_prefix.size()));  // `{...}` keys fail the name rule
  }
  return name;  // a foreign key under the prefix fails the name rule in held_locks()
}

}  // namespace

std::vector<LockState> RedisStore::list_locks(std::string_view prefix, Deadline deadline) {
  const std::string& store_prefix = pool_.config().prefix;
  const std::string key_prefix = store_prefix + std::string(prefix);
  // One pattern for both key shapes: the lease key `P<lock>` and the size key `{P<lock>}:slots`.
  const std::string pattern = "*" + glob_escaped(key_prefix) + "*";
  std::set<std::string> names;
  std::vector<ConnectionPool*> nodes = {&pool_};
  if (cluster_) nodes = cluster_->primaries(deadline);  // SCAN walks one node's keys
  for (ConnectionPool* node : nodes) {
    std::string cursor = "0";
    do {
      Reply reply;
      node->run(deadline, [&](Connection& c, Deadline d) {
        reply = c.call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, d);
      });
      if (auto text = error_text(reply.get()); !text.empty())
        throw_reply_error(text, node->config(), "SCAN");
      const redisReply* r = reply.get();
      if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
        throw BackendError(ErrorCode::internal, "redis", "unexpected reply to SCAN");
      cursor.assign(r->element[0]->str, r->element[0]->len);
      const redisReply* keys = r->element[1];
      for (std::size_t i = 0; i < keys->elements; ++i) {
        if (keys->element[i]->type != REDIS_REPLY_STRING) continue;
        std::string name =
            lock_of_key(std::string_view(keys->element[i]->str, keys->element[i]->len),
                        store_prefix, key_prefix);
        if (!name.empty()) names.insert(std::move(name));
      }
    } while (cursor != "0");
  }
  return detail::held_locks(*this, names, deadline);
}

void throw_reply_error(const std::string& text, const Config& config, std::string_view operation) {
  std::string code = text.substr(0, text.find(' '));
  std::string where =
      "redis at " + config.endpoint() + " rejected " + std::string(operation) + ": " + text;
  if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM")
    throw BackendError(
        ErrorCode::failed_precondition, "redis",
        where + " (check the user, password and ACL of " + config.redacted_uri + ")");
  if ((code == "MOVED" || code == "ASK") && !config.cluster())
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       where +
                           " (a Redis Cluster node: use redis-cluster://node1,node2,... to follow "
                           "its redirections)");
  if (code == "MOVED" || code == "ASK")  // a cluster that kept redirecting (resharding)
    throw BackendError(ErrorCode::unavailable, "redis", where);
  if (code == "CROSSSLOT") throw BackendError(ErrorCode::internal, "redis", where);
  if (code == "LOADING" || code == "BUSY" || code == "MASTERDOWN" || code == "TRYAGAIN" ||
      code == "CLUSTERDOWN" || code == "READONLY" || code == "OOM")
    throw BackendError(ErrorCode::unavailable, "redis", where);
  throw BackendError(ErrorCode::internal, "redis", where);
}

}  // namespace leader::redis

namespace leader {

RedisPoolStats redis_pool_stats(LeaseStore& store) {
  auto* found = dynamic_cast<redis::RedisStore*>(&detail::unchecked(store));
  if (found == nullptr) throw InvalidArgument("redis_pool_stats: not a Redis store");
  return {found->pool().open_connections(), found->pool().config().pool_size};
}

}  // namespace leader
