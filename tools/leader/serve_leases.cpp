#include "serve_leases.hpp"

#include <algorithm>
#include <optional>
#include <random>

#include "leader/elector.hpp"
#include "leader/errors.hpp"
#include "leader/group.hpp"
#include "leader/history.hpp"
#include "leader/names.hpp"
#include "run_election.hpp"

namespace leader::cli {

/// One lease held for an API client: the engine's guard and what HTTP adds to it.
struct ApiLease {
  std::string id, lock;
  std::string client;  ///< only this client may renew, release or read it by id
  int slots = 0;
  Duration ttl{};  ///< the ttl the client last asked for: a renew without one asks it again
  WallTime acquired_at{};
  std::mutex mu;  ///< serialises renew and release of this lease
  std::optional<LeaseGuard> guard;
};

namespace {

constexpr std::size_t kMaxLocksSeen = 1000;

// Releases `lease` (its mutex held) and drops its guard: the store's failure as text, empty when
// released. An API client asked for the release and must hear that it failed (503); the lease
// then expires on the store at its ttl.
std::string end_lease(ApiLease& lease) {
  std::exception_ptr failure;
  if (lease.guard) failure = lease.guard->release();
  lease.guard.reset();
  if (!failure) return {};
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "a non-standard exception";
  }
}

std::string random_lease_id() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 8; ++i) {
    std::uint32_t v = rd();
    for (int j = 0; j < 4; ++j, v >>= 4) id += kHex[v & 0xf];
  }
  return id;
}

std::int64_t millis_left(TimePoint deadline) {
  auto left =
      std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now()).count();
  return std::max<std::int64_t>(0, left);
}

// Caller holds lease.mu and lease.guard is set. Only the replies to the client that holds the
// lease (acquire, renew) carry its id: listings never do.
nlohmann::json lease_json(ApiLease& lease, bool with_id) {
  LeaderContext& ctx = lease.guard->context();
  nlohmann::json out = nlohmann::json::object();
  if (with_id) out["lease_id"] = lease.id;
  out.update({{"lock", lease.lock},
              {"node_id", ctx.node_id()},
              {"fencing_token", ctx.fencing_token()},
              {"slot", ctx.slot()},
              {"slots", lease.slots},
              {"ttl_ms", lease.ttl.count()},
              {"granted_ttl_ms", ctx.lease().granted_ttl.count()},
              {"expires_in_ms", millis_left(ctx.deadline())},
              {"deadline", wall_time_of(ctx.deadline())},
              {"acquired_at", format_utc(lease.acquired_at)}});
  return out;
}

// The engine's acquire with the request's ttl, wait, node id and slots as the elector's options
// (no auto_extend: the client renews). The guard outlives the elector: it keeps its engine.
Acquisition acquire_with(const std::shared_ptr<LeaseStore>& store,
                         const std::shared_ptr<EventBus>& bus, const AcquireRequest& r,
                         const std::string& node_id, const std::stop_token& stop) {
  ElectorHooks hooks;
  hooks.events = bus;
  ElectionOptions o;
  o.wait_time = r.wait;
  o.lease_time = r.ttl;
  o.node_id = node_id;
  if (r.slots > 0) {
    LeaderGroupElector elector(store, {.election = o, .max_leaders = r.slots}, hooks);
    return elector.acquire(r.lock, stop);
  }
  LeaderElector elector(store, o, hooks);
  return elector.acquire(r.lock, stop);
}

}  // namespace

bool same_secret(std::string_view given, std::string_view secret) {
  // Every byte of the secret is compared, whatever `given` is, and without an early exit.
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < secret.size(); ++i)
    diff |= static_cast<unsigned char>(secret[i] ^ (i < given.size() ? given[i] : 0));
  return diff == 0;
}

nlohmann::json error_json(const std::string& code, const std::string& reason) {
  return {{"error", code}, {"reason", reason}};
}

void rethrow_as_api_error(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ApiError&) {
    throw;
  } catch (const InvalidArgument& e) {
    throw ApiError(400, "invalid_argument", e.what());
  } catch (const BackendError& e) {
    throw ApiError(503, std::string(to_string(e.code())), e.what());
  }
}

std::string wall_time_of(TimePoint deadline) {
  auto left = deadline - std::chrono::steady_clock::now();
  return format_utc(std::chrono::system_clock::now() +
                    std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
}

ClientLeases::ClientLeases(std::shared_ptr<LeaseStore> store, std::shared_ptr<EventBus> bus,
                           std::string default_node_id)
    : store_(std::move(store)),
      bus_(std::move(bus)),
      default_node_id_(std::move(default_node_id)) {}

ClientLeases::~ClientLeases() { release_all(); }

nlohmann::json ClientLeases::acquire(const AcquireRequest& request, const std::stop_token& stop) {
  auto lease = std::make_shared<ApiLease>();
  lease->id = random_lease_id();
  lease->lock = request.lock;
  lease->slots = request.slots;
  lease->ttl = request.ttl;
  lease->client = request.client;
  // A named client's lease shows its name as node id (status, history) unless it gives one.
  std::string node_id = !request.node_id.empty()  ? request.node_id
                        : !request.client.empty() ? request.client
                                                  : default_node_id_;
  Acquisition acq;
  try {
    validate_lock_name(request.lock);
    acq = acquire_with(store_, bus_, request, node_id, stop);
  } catch (...) {
    rethrow_as_api_error(std::current_exception());
  }
  {
    std::lock_guard lock(mu_);
    if (seen_.size() < kMaxLocksSeen) seen_.insert(request.lock);
    slots_[request.lock] = request.slots;
  }
  if (!acq) {
    if (acq.skipped.reason == SkipReason::cancelled)
      throw ApiError(503, "shutting_down", "the sidecar is stopping");
    std::optional<LockState> state;
    try {
      state = store_->inspect(request.lock, Deadline::after(std::chrono::seconds(2)));
    } catch (const std::exception&) {
      // best effort: the message says "another owner"
    }
    throw ApiError(409, "held_elsewhere",
                   "'" + request.lock + "' is held by " + describe_holders(state, "another owner"));
  }
  lease->acquired_at = std::chrono::system_clock::now();
  std::lock_guard lease_lock(lease->mu);
  lease->guard.emplace(std::move(*acq.guard));
  nlohmann::json out = lease_json(*lease, true);
  std::lock_guard lock(mu_);
  leases_.emplace(lease->lock, lease);
  return out;
}

std::shared_ptr<ApiLease> ClientLeases::find(const std::string& lock, const std::string& id,
                                             const std::string& client) {
  std::lock_guard guard(mu_);
  // Every lease of the lock is compared in constant time (no early exit on a match): how long a
  // lookup takes tells nothing about how close a guessed id came.
  std::shared_ptr<ApiLease> found;
  auto [first, last] = leases_.equal_range(lock);
  for (auto it = first; it != last; ++it)
    if (same_secret(id, it->second->id) && it->second->client == client) found = it->second;
  if (!found)
    throw ApiError(404, "unknown_lease",
                   "no lease with this id of '" + lock +
                       "' is held by this sidecar (released, expired or never acquired)");
  return found;
}

void ClientLeases::forget(const std::shared_ptr<ApiLease>& lease) {
  auto [first, last] = leases_.equal_range(lease->lock);
  for (auto it = first; it != last; ++it) {
    if (it->second == lease) {
      leases_.erase(it);
      return;
    }
  }
}

nlohmann::json ClientLeases::renew(const std::string& lock, const std::string& id,
                                   const std::string& client, Duration ttl) {
  auto lease = find(lock, id, client);
  std::unique_lock lease_lock(lease->mu);
  auto drop_as_lost = [&](const std::string& why) {
    {
      std::lock_guard guard(mu_);
      forget(lease);
    }
    lease->guard.reset();
    return ApiError(409, "lease_lost", "the lease of '" + lock + "' " + why);
  };
  if (!lease->guard || !lease->guard->context().still_leader())
    throw drop_as_lost("was lost or reached its deadline before this renewal");
  Duration asked = ttl.count() > 0 ? ttl : lease->ttl;
  try {
    if (!lease->guard->context().extend(asked))
      throw drop_as_lost("is no longer held on the store (taken over or expired)");
  } catch (const ApiError&) {
    throw;
  } catch (...) {
    rethrow_as_api_error(std::current_exception());
  }
  lease->ttl = asked;
  return lease_json(*lease, true);
}

nlohmann::json ClientLeases::release(const std::string& lock, const std::string& id,
                                     const std::string& client) {
  auto lease = find(lock, id, client);
  {
    std::lock_guard guard(mu_);
    forget(lease);
  }
  std::lock_guard lease_lock(lease->mu);
  const std::string failure = end_lease(*lease);
  if (!failure.empty())
    throw ApiError(503, "unavailable",
                   "the lease of '" + lock + "' could not be released on the store (" + failure +
                       "); the sidecar no longer holds it and it expires on the store at its ttl");
  return {{"released", true}, {"lock", lock}};
}

nlohmann::json ClientLeases::get(const std::string& id, const std::string& client) {
  std::shared_ptr<ApiLease> found;
  {
    std::lock_guard guard(mu_);
    // Every lease is compared in constant time, without an early exit (as find()).
    for (auto& [lock, lease] : leases_)
      if (same_secret(id, lease->id) && lease->client == client) found = lease;
  }
  if (found) {
    std::lock_guard lease_lock(found->mu);
    if (found->guard && found->guard->context().still_leader()) return lease_json(*found, false);
  }
  throw ApiError(404, "unknown_lease",
                 "no live lease with this id is held by this sidecar (released, expired or never "
                 "acquired)");
}

nlohmann::json ClientLeases::list() {
  std::vector<std::shared_ptr<ApiLease>> all;
  {
    std::lock_guard guard(mu_);
    for (auto& [lock, lease] : leases_) all.push_back(lease);
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& lease : all) {
    std::lock_guard lease_lock(lease->mu);
    // A lease past its local deadline is no longer listed, even before the reaper drops it: the
    // store may give the lock to another client right after that deadline.
    if (lease->guard && lease->guard->context().still_leader())
      out.push_back(lease_json(*lease, false));
  }
  return out;
}

nlohmann::json ClientLeases::held_for(const std::string& lock) {
  std::vector<std::shared_ptr<ApiLease>> of_lock;
  {
    std::lock_guard guard(mu_);
    auto [first, last] = leases_.equal_range(lock);
    for (auto it = first; it != last; ++it) of_lock.push_back(it->second);
  }
  nlohmann::json out = nlohmann::json::array();
  for (auto& lease : of_lock) {
    std::lock_guard lease_lock(lease->mu);
    if (!lease->guard || !lease->guard->context().still_leader()) continue;
    LeaderContext& ctx = lease->guard->context();
    out.push_back({{"node_id", ctx.node_id()},
                   {"fencing_token", ctx.fencing_token()},
                   {"slot", ctx.slot()},
                   {"expires_in_ms", millis_left(ctx.deadline())},
                   {"deadline", wall_time_of(ctx.deadline())}});
  }
  return out;
}

int ClientLeases::slots_of(const std::string& lock) {
  std::lock_guard guard(mu_);
  auto it = slots_.find(lock);
  return it == slots_.end() ? 0 : it->second;
}

std::set<std::string> ClientLeases::locks_seen() {
  std::lock_guard guard(mu_);
  return seen_;
}

std::size_t ClientLeases::release_all(std::vector<std::string>* failures) {
  std::multimap<std::string, std::shared_ptr<ApiLease>> all;
  {
    std::lock_guard guard(mu_);
    all.swap(leases_);
  }
  for (auto& [lock, lease] : all) {
    std::lock_guard lease_lock(lease->mu);
    const std::string failure = end_lease(*lease);
    if (!failure.empty() && failures) failures->push_back("'" + lease->lock + "': " + failure);
  }
  return all.size();
}

void ClientLeases::drop_expired() {
  std::vector<std::shared_ptr<ApiLease>> gone;
  {
    std::lock_guard guard(mu_);
    for (auto it = leases_.begin(); it != leases_.end();) {
      std::unique_lock lease_lock(it->second->mu, std::try_to_lock);
      bool dead = lease_lock.owns_lock() &&
                  (!it->second->guard || !it->second->guard->context().still_leader());
      if (dead) {
        gone.push_back(it->second);
        it = leases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& lease : gone) {
    std::lock_guard lease_lock(lease->mu);
    lease->guard.reset();  // its release finds the lease lost or expired: nothing held remains
  }
}

}  // namespace leader::cli
