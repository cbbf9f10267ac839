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
  if (c.transport == Transport::tls) return "rediss";
  return c.transport == Transport::unix_socket ? "unix" : "redis";
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
  keys.push_back(store.tagged_key(r.lock, "fence"));
  keys.push_back(store.tagged_key(r.lock, "slots"));
  return keys;
}

std::vector<std::string> acquire_args(const RedisStore& store, const LeaseRequest& r) {
  return {r.owner, r.node_id, ms(r.ttl), std::to_string(r.slots), store.changes_channel(r.lock)};
}

}  // namespace

RedisStore::RedisStore(Config config)
    : scheme_(scheme_of(config)), prefix_(config.prefix), client_(std::move(config)) {}

std::string_view RedisStore::scheme() const { return scheme_; }

std::string RedisStore::slot_key(std::string_view lock, int slot) const {
  if (slot == 0) return prefix_ + std::string(lock);
  return tagged_key(lock, "slot:" + std::to_string(slot));
}

std::string RedisStore::tagged_key(std::string_view name, std::string_view suffix) const {
  return "{" + prefix_ + std::string(name) + "}:" + std::string(suffix);
}

Acquired RedisStore::granted(const LeaseRequest& r, const redisReply* reply, TimePoint sent,
                             int& declared) {
  const auto granted = decode_acquire(reply);
  if (granted && granted->slot == kHeldAsAnotherSize)
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       size_mismatch(r.lock, granted->size, r.slots));
  if (granted && granted->slot < 0) {  // the lock was last a larger group: declare its keys
    if (declared > std::max(1, r.slots))
      throw BackendError(ErrorCode::internal, "redis",
                         "unexpected reply to acquire (the lock's size changed twice)");
    declared = std::clamp(granted->size, declared + 1, kMaxInspectedSlots);
    return {};
  }
  declared = 0;
  if (!granted) return {};
  return {Lease{r.lock, r.owner, r.node_id, granted->fencing_token, granted->slot, r.slots, r.ttl,
                sent}};
}

Acquired RedisStore::try_acquire(const LeaseRequest& r, Deadline deadline) {
  // Every key a script touches is declared: the request's slots first, and, when the lock was
  // last used with more slots, all of those (the script says so and we ask once more).
  for (int declared = std::max(1, r.slots);;) {
    const Sent sent = client_.send(
        script_call(acquire_script(), acquire_keys(*this, r, declared), acquire_args(*this, r)),
        "a script", deadline, true);
    Acquired got = granted(r, sent.reply.get(), sent.at, declared);
    if (declared != 0) continue;
    if (got && sent.acked >= 0 && sent.acked < client_.config().wait_replicas)
      not_replicated(*got.lease, sent.acked, deadline);
    return got;
  }
}

bool RedisStore::attempts_async() const noexcept { return client_.lane_available(); }

void RedisStore::try_acquire_async(const LeaseRequest& request, Deadline deadline,
                                   std::function<void(Attempt)> done) {
  if (!attempts_async())
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       "asynchronous attempts need a standalone or Sentinel store without "
                       "?wait_replicas= (attempts_async() is false)");
  submit_acquire(request, std::max(1, request.slots), deadline,
                 std::make_shared<std::function<void(Attempt)>>(std::move(done)));
}

void RedisStore::submit_acquire(const LeaseRequest& r, int declared, Deadline deadline,
                                const std::shared_ptr<std::function<void(Attempt)>>& done) {
  client_.submit(  // the very call try_acquire sends
      script_call(acquire_script(), acquire_keys(*this, r, declared), acquire_args(*this, r)),
      changes_channel(r.lock), "a script", deadline,
      [this, r, declared, deadline, done](Reply reply, const std::exception_ptr& error,
                                          TimePoint sent, std::uint64_t seen) mutable {
        Attempt a;
        a.seen = seen;
        try {
          if (error) std::rethrow_exception(error);  // an error reply too (Client::submit)
          a.acquired = granted(r, reply.get(), sent, declared);
          if (declared != 0) return submit_acquire(r, declared, deadline, done);
        } catch (...) {
          a.error = std::current_exception();
        }
        (*done)(std::move(a));
      });
}

std::uint64_t RedisStore::wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                                      Deadline last, std::uint64_t order,
                                      std::function<void(bool)> woken) {
  return client_.wait_change(changes_channel(lock), seen, until, last, order, std::move(woken));
}

void RedisStore::cancel_wait(std::uint64_t id) noexcept { client_.cancel_wait(id); }

void RedisStore::not_replicated(const Lease& lease, int acked, Deadline deadline) {
  const ClientConfig& c = client_.config();
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

LeaseStatus RedisStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  Reply reply = eval(release_script(), {slot_key(lease.lock, lease.slot)},
                     {lease.owner, ms(keep_for), changes_channel(lease.lock)}, deadline);
  return decode_owned(reply.get(), "release") ? LeaseStatus::ok : LeaseStatus::lost;
}

LockState RedisStore::inspect(std::string_view lock, Deadline deadline) {
  // Every key a script touches is declared, so first read how many slots the lock has used.
  Reply count = command({"GET", tagged_key(lock, "slots")}, deadline);
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
  const std::string& store_prefix = prefix_;
  const std::string key_prefix = store_prefix + std::string(prefix);
  // One pattern for both key shapes: the lease key `P<lock>` and the size key `{P<lock>}:slots`.
  const std::string pattern = "*" + glob_escaped(key_prefix) + "*";
  std::set<std::string> names;
  for (ConnectionPool* node : client_.nodes(deadline)) {  // SCAN walks one node's keys
    std::string cursor = "0";
    do {
      const Reply reply = client_.send_to(
          *node, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}, "SCAN", deadline);
      const redisReply* r = reply.get();
      if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
          r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
        throw BackendError(ErrorCode::internal, "redis", "unexpected reply to SCAN");
      cursor = text_of(r->element[0]);
      const redisReply* keys = r->element[1];
      for (std::size_t i = 0; i < keys->elements; ++i) {
        std::string name = lock_of_key(text_of(keys->element[i]), store_prefix, key_prefix);
        if (!name.empty()) names.insert(std::move(name));
      }
    } while (cursor != "0");
  }
  return detail::held_locks(*this, names, deadline);
}

}  // namespace leader::redis

namespace leader {

RedisPoolStats redis_pool_stats(LeaseStore& store) {
  auto* found = dynamic_cast<redis::RedisStore*>(&detail::unchecked(store));
  if (found == nullptr) throw InvalidArgument("redis_pool_stats: not a Redis store");
  return {found->pool().open_connections(), found->pool().config().pool_size};
}

}  // namespace leader
