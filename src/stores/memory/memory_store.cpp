// The in-process reference implementation of the store contract (store.hpp).

#include "memory_store.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

#include "leader/detail/group_size.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/lock_listing.hpp"
#include "leader/names.hpp"
#include "leader/stores/memory.hpp"

namespace leader::memory {
namespace {

struct Row {
  std::string owner;
  std::string node_id;
  std::uint64_t token = 0;
  TimePoint expires = TimePoint::min();  // a free slot: never granted, or released
  int slots = 0;  // the group size of the request that took it (0: a single leader)
};

// One lock's slots and fencing counter. A released slot keeps its row (expired at once), so the
// next grant reuses its strings' buffers: an uncontended acquire + release allocates nothing
// here after the first. Rows beyond a group's size are expired ones of an
// earlier, larger group size.
struct LockRows {
  std::uint64_t fence = 0;
  std::vector<Row> rows;  // by slot
};

struct CandidateRow {
  Candidate candidate;
  TimePoint expires{};
};

struct State {
  std::mutex mu;
  bool unavailable = false;
  // By lock name, ordered (list_locks walks a prefix), looked up by string_view (std::less<>).
  // Entries are never removed: the fencing counter must outlive every holder.
  std::map<std::string, LockRows, std::less<>> leases;
  std::map<std::pair<std::string, std::string>, CandidateRow> candidates;  // (group, node)
};

// Every call is a short critical section on in-process state (never_blocks), so the async
// layers call it inline instead of on a BlockingPool thread.
class MemoryStore final : public LeaseStore, public LockLister {
 public:
  MemoryStore(std::shared_ptr<State> state, std::shared_ptr<Clock> clock)
      : state_(std::move(state)), clock_(std::move(clock)) {}

  std::string_view scheme() const override { return "memory"; }
  Capabilities capabilities() noexcept override { return {.listing = this, .never_blocks = true}; }

  Acquired try_acquire(const LeaseRequest& r, Deadline) override {
    auto lock = guard();
    const TimePoint now = clock_->now();
    auto found = state_->leases.find(std::string_view(r.lock));
    if (found == state_->leases.end()) found = state_->leases.try_emplace(r.lock).first;
    LockRows& entry = found->second;
    Row* own = nullptr;
    int own_slot = 0;
    for (std::size_t slot = 0; slot < entry.rows.size(); ++slot) {
      Row& row = entry.rows[slot];
      if (row.expires <= now) continue;
      if (row.slots != r.slots)
        throw detail::group_size_mismatch("memory", r.lock, row.slots, r.slots);
      if (row.owner == r.owner) {
        own = &row;
        own_slot = static_cast<int>(slot);
      }
    }
    if (own != nullptr) {  // our own live lease (a retry after an unknown outcome)
      own->expires = now + r.ttl;
      return {Lease{r.lock, r.owner, own->node_id, own->token, own_slot, r.slots, r.ttl, now}};
    }
    const auto slots = static_cast<std::size_t>(std::max(1, r.slots));
    if (entry.rows.size() < slots) entry.rows.resize(slots);
    for (std::size_t slot = 0; slot < slots; ++slot) {
      Row& row = entry.rows[slot];
      if (row.expires > now) continue;
      row.owner.assign(r.owner);  // assign, not a new string: the buffer is reused
      row.node_id.assign(r.node_id);
      row.token = ++entry.fence;
      row.expires = now + r.ttl;
      row.slots = r.slots;
      return {Lease{r.lock, r.owner, r.node_id, row.token, static_cast<int>(slot), r.slots, r.ttl,
                    now}};
    }
    return {};
  }

  Renewal renew(const Lease& lease, Duration ttl, Deadline) override {
    auto lock = guard();
    Row* row = owned(lease);
    if (!row) return {};
    row->expires = clock_->now() + ttl;
    return {LeaseStatus::ok, ttl};
  }

  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline) override {
    auto lock = guard();
    Row* row = owned(lease);
    if (!row) return LeaseStatus::lost;
    // Released: the row stays (free at once), its strings' buffers kept for the next grant.
    row->expires = keep_for > Duration{0} ? clock_->now() + keep_for : TimePoint::min();
    return LeaseStatus::ok;
  }

  LockState inspect(std::string_view lock_name, Deadline) override {
    auto lock = guard();
    const TimePoint now = clock_->now();
    LockState out{std::string(lock_name), {}};
    if (auto it = state_->leases.find(lock_name); it != state_->leases.end())
      append_live(it->second, now, out);
    return out;
  }

  std::vector<LockState> list_locks(std::string_view prefix, Deadline) override {
    auto lock = guard();
    const TimePoint now = clock_->now();
    std::vector<LockState> out;
    for (auto it = state_->leases.lower_bound(prefix);
         it != state_->leases.end() && it->first.starts_with(prefix); ++it) {
      LockState state{it->first, {}};
      append_live(it->second, now, state);
      if (!state.holders.empty()) out.push_back(std::move(state));
    }
    return out;
  }

  void put_candidate(std::string_view group, const Candidate& c, Duration ttl, Deadline) override {
    auto lock = guard();
    const TimePoint now = clock_->now();
    auto key = std::make_pair(std::string(group), c.node_id);
    auto it = state_->candidates.find(key);
    Candidate stored = c;
    if (it != state_->candidates.end() && it->second.expires > now)
      stored.registered_at = it->second.candidate.registered_at;
    else
      stored.registered_at = std::chrono::system_clock::now();
    state_->candidates[key] = CandidateRow{std::move(stored), now + ttl};
  }

  std::vector<Candidate> list_candidates(std::string_view group, Deadline) override {
    auto lock = guard();
    const TimePoint now = clock_->now();
    std::vector<Candidate> out;
    for (const auto& [key, row] : state_->candidates)
      if (key.first == group && row.expires > now) out.push_back(row.candidate);
    return out;
  }

  void remove_candidate(std::string_view group, std::string_view node, Deadline) override {
    auto lock = guard();
    state_->candidates.erase({std::string(group), std::string(node)});
  }

  void set_unavailable(bool v) {
    std::lock_guard lock(state_->mu);
    state_->unavailable = v;
  }

 private:
  std::unique_lock<std::mutex> guard() {
    std::unique_lock lock(state_->mu);
    if (state_->unavailable)
      throw BackendError(ErrorCode::unavailable, "memory", "the store is marked unavailable");
    return lock;
  }

  Row* owned(const Lease& lease) {
    auto it = state_->leases.find(std::string_view(lease.lock));
    if (it == state_->leases.end() || lease.slot < 0 ||
        static_cast<std::size_t>(lease.slot) >= it->second.rows.size())
      return nullptr;
    Row& row = it->second.rows[static_cast<std::size_t>(lease.slot)];
    if (row.owner != lease.owner || row.expires <= clock_->now()) return nullptr;
    return &row;
  }

  // The live holders of one lock, by slot.
  static void append_live(const LockRows& entry, TimePoint now, LockState& out) {
    for (std::size_t slot = 0; slot < entry.rows.size(); ++slot) {
      const Row& row = entry.rows[slot];
      if (row.expires <= now) continue;
      out.holders.push_back(Holder{row.node_id, row.owner, row.token, static_cast<int>(slot),
                                   std::chrono::duration_cast<Duration>(row.expires - now)});
    }
  }

  std::shared_ptr<State> state_;
  std::shared_ptr<Clock> clock_;
};

std::shared_ptr<State> named_state(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<State>> states;
  std::lock_guard lock(mu);
  auto& s = states[name];
  if (!s) s = std::make_shared<State>();
  return s;
}

}  // namespace

std::shared_ptr<LeaseStore> open_named(const Uri& uri) {
  uri.expect_params({});
  if (!uri.hosts.empty())
    throw InvalidArgument("store URI '" + uri.redacted() +
                          "': memory takes no host (use memory: or memory:NAME)");
  std::string name = uri.path;
  if (!name.empty() && !is_valid_lock_name(name))
    throw InvalidArgument("store URI '" + uri.redacted() +
                          "': the memory store name must follow the lock-name rules");
  return std::make_shared<MemoryStore>(named_state(name), Clock::system());
}

}  // namespace leader::memory

namespace leader {

std::shared_ptr<LeaseStore> make_memory_store(memory::Config config) {
  if (!config.clock) config.clock = Clock::system();
  return detail::checked(std::make_shared<memory::MemoryStore>(std::make_shared<memory::State>(),
                                                               std::move(config.clock)));
}

void set_memory_store_unavailable(LeaseStore& store, bool unavailable) {
  auto* m = dynamic_cast<memory::MemoryStore*>(&detail::unchecked(store));
  if (!m) throw InvalidArgument("set_memory_store_unavailable: not a memory store");
  m->set_unavailable(unavailable);
}

}  // namespace leader
