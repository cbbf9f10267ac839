// An acquisition, top-down: Sessions::acquire picks the Core (session) of the lease and runs one
// attempt on it; the single-lock and group recipes (one round trip each: create + listing, or a
// multi claiming a slot + listing), the line and the shape checks call the session's typed
// requests and record what they got in the Core.

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "zk_core.hpp"

namespace leader::zookeeper {
namespace {

using Json = nlohmann::json;

struct Registry {
  std::mutex mu;
  std::vector<std::weak_ptr<Core>> cores;
};
// Never destroyed: lingering timer threads may still use it during static destruction.
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

constexpr Duration kConnectTimeout{5000};  // bound of the first connection of a store
constexpr std::size_t kMaxSessions = 8;    // distinct-ttl sessions per store (auto mode)

// The sequence number of a lock contender, or nullopt: the name ends in 10 digits (a '-' before
// them after a 32-bit wrap) preceded by kazoo's "__lock__"/"__rlock__" or Curator's "lock-".
std::optional<std::int64_t> contender_sequence(std::string_view name) {
  constexpr std::size_t kDigits = 10;
  if (name.size() < kDigits) return std::nullopt;
  std::string_view digits = name.substr(name.size() - kDigits);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::string_view head = name.substr(0, name.size() - kDigits);
  bool negative = head.ends_with('-') && !head.ends_with("lock-");
  if (negative) head.remove_suffix(1);
  if (!head.ends_with("__lock__") && !head.ends_with("__rlock__") && !head.ends_with("lock-"))
    return std::nullopt;
  std::int64_t seq = std::stoll(std::string(digits));
  return negative ? -seq : seq;
}

// The full path of the contender just ahead of `name` among `contenders` (sorted), or empty.
std::string ahead_of(const std::vector<Contender>& contenders, const std::string& dir,
                     const std::string& name) {
  for (std::size_t i = 1; i < contenders.size(); ++i)
    if (contenders[i].name == name) return dir + "/" + contenders[i - 1].name;
  return {};
}

bool has_slots(const std::vector<std::string>& children) {
  return std::any_of(children.begin(), children.end(),
                     [](const std::string& c) { return slot_index(c).has_value(); });
}

}  // namespace

std::optional<int> slot_index(std::string_view name) {
  if (!name.starts_with("slot-") || name.size() <= 5 || name.size() >= 15) return std::nullopt;
  name.remove_prefix(5);
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoi(std::string(name));
}

std::vector<Contender> sorted_contenders(const std::vector<std::string>& children) {
  std::vector<Contender> out;
  for (const auto& c : children)
    if (auto seq = contender_sequence(c)) out.push_back({c, *seq});
  std::sort(out.begin(), out.end(), [](const Contender& a, const Contender& b) {
    return a.seq != b.seq ? a.seq < b.seq : a.name < b.name;
  });
  return out;
}

Sessions::Sessions(Config config)
    : config_(std::move(config)),
      base_(Core::start(config_, Deadline::after(std::min(config_.session.session_timeout * 2,
                                                          kConnectTimeout)))) {}

Sessions::~Sessions() {
  for (const auto& core : all()) core->close();
}

std::shared_ptr<Core> Sessions::for_ttl(Duration ttl, Deadline deadline) {
  if (!config_.session_per_ttl) return base_;
  const Duration key = std::max(Duration(1000), (ttl + Duration(999)) / 1000 * 1000);
  std::lock_guard lock(mu_);
  if (auto it = by_timeout_.find(key); it != by_timeout_.end()) return it->second;
  if (by_timeout_.size() >= kMaxSessions) {  // reuse the nearest longer (else longest) session
    auto it = by_timeout_.lower_bound(key);
    return it != by_timeout_.end() ? it->second : by_timeout_.rbegin()->second;
  }
  Config c = config_;
  c.session.session_timeout = key;
  auto core = Core::start(std::move(c), deadline);
  by_timeout_[key] = core;
  return core;
}

std::vector<std::shared_ptr<Core>> Sessions::all() {
  std::vector<std::shared_ptr<Core>> out{base_};
  std::lock_guard lock(mu_);
  for (const auto& [timeout, core] : by_timeout_) out.push_back(core);
  return out;
}

std::shared_ptr<Core> Core::start(Config config, Deadline deadline) {
  auto core = std::make_shared<Core>(std::move(config));
  core->session_.connect(deadline);
  core->self_ = core;
  std::thread([c = core.get()] { c->timer_loop(); }).detach();
  auto& r = registry();
  std::lock_guard lock(r.mu);
  std::erase_if(r.cores, [](const std::weak_ptr<Core>& w) { return w.expired(); });
  r.cores.push_back(core);
  return core;
}

std::shared_ptr<Core> Core::holding(const std::string& owner) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& w : r.cores)
    if (auto c = w.lock(); c && c->holds(owner)) return c;
  return nullptr;
}

Acquired Sessions::acquire(const LeaseRequest& request, const std::string& dir, Deadline deadline) {
  if (auto holder = Core::holding(request.owner))  // this owner asks again: its own lease
    if (auto mine = holder->reacquire(request, dir, deadline)) return {std::move(mine)};
  auto core = for_ttl(request.ttl, deadline);
  Core::Acquiring busy(*core, request.owner);
  return request.slots >= 1 ? core->acquire_slot(request, dir, deadline)
                            : core->acquire_single(request, dir, deadline);
}

Duration Core::granted(Duration ttl) const { return std::min(ttl, session_.negotiated_timeout()); }

Lease Core::track(const LeaseRequest& request, const std::string& path, const NodeStat& stat,
                  int slot, TimePoint sent_at, std::uint64_t generation) {
  Lease lease{
      request.lock, request.owner, request.node_id,      static_cast<std::uint64_t>(stat.czxid),
      slot,         request.slots, granted(request.ttl), sent_at};
  bool sooner = false;  // the timer sleeps past this lease's deletion time: wake it
  {
    std::lock_guard lock(mu_);
    // The node is deleted at the requested ttl; lease.ttl (capped by the session timeout) is
    // what the server guarantees when the session cannot be confirmed.
    Held& h = held_[request.owner];
    // The same node tracked again (an adoption) keeps its renewal watch: no second one on it.
    const std::uint64_t watch =
        h.path == path && h.czxid == stat.czxid && h.generation == generation ? h.watch : 0;
    h = Held{path, stat.czxid, generation, sent_at + request.ttl, false, slot, watch};
    sooner = h.expire_at < timer_wake_;
  }
  if (sooner) cv_.notify_all();
  return lease;
}

Core::HeldMap::iterator Core::current(const std::string& owner, std::uint64_t generation) {
  auto it = held_.find(owner);
  if (it == held_.end() || it->second.generation == generation) return it;
  held_.erase(it);  // its session has gone, and its node with it
  return held_.end();
}

bool Core::holds(const std::string& owner) {
  {
    std::lock_guard lock(mu_);
    if (held_.count(owner) == 0) return false;  // nothing to check against the session
  }
  const std::uint64_t generation = session_.generation();  // read before mu_ (its own lock)
  std::lock_guard lock(mu_);
  return current(owner, generation) != held_.end();
}

Core::Acquiring::Acquiring(Core& core, std::string owner) : core_(core), owner_(std::move(owner)) {
  std::lock_guard lock(core_.mu_);
  ++core_.acquiring_[owner_];
}

Core::Acquiring::~Acquiring() {
  bool sweep = false;
  {
    std::lock_guard lock(core_.mu_);
    if (auto it = core_.acquiring_.find(owner_);
        it != core_.acquiring_.end() && --it->second == 0) {
      core_.acquiring_.erase(it);
      core_.sweep_now_ = !core_.orphans_.empty() || !core_.sweeping_.empty();
      sweep = core_.sweep_now_;
    }
  }
  if (sweep) core_.cv_.notify_all();
}

std::string Core::node_data(const LeaseRequest& request, int slot) const {
  return Json{{"owner", request.owner},
              {"node_id", request.node_id},
              {"ttl_ms", granted(request.ttl).count()},
              {"slot", slot}}
      .dump();
}

Acquired Core::acquire_single(const LeaseRequest& request, const std::string& dir,
                              Deadline deadline) {
  if (request.wait_in_line)  // waiting in line since an earlier attempt: is it our turn?
    if (auto place = place_of(request.owner))
      if (auto turn = take_turn(request, dir, *place, deadline)) return std::move(*turn);
  // The session the create goes out on, named by the call before it sends (it replaces an
  // expired session first); 0 while nothing was sent: no orphan of a gone session is kept.
  std::uint64_t generation = 0;
  const TimePoint sent_at = steady_now();
  const std::string prefix = dir + "/" + request.owner + "__lock__";
  const std::string data = node_data(request, 0);
  Reply created, listed;
  try {  // one round trip: the create and the listing behind it
    std::tie(created, listed) = session_.create_and_list(
        prefix, data, CreateMode::ephemeral_sequential, dir, deadline, &generation);
  } catch (const BackendError&) {  // the node may exist without us knowing its sequence
    add_orphan({dir, request.owner, true, generation});
    throw;
  }
  if (created.rc != kOk) session_.fail(created.rc, "create " + prefix);
  const std::string name = created.value.substr(dir.size() + 1);
  Waiting mine{created.value, created.stat.czxid, generation, {}};
  refuse_if_group(request, dir, listed.children, mine, deadline);
  auto contenders = sorted_contenders(listed.children);
  if (!contenders.empty() && contenders.front().name == name)
    return {track(request, created.value, created.stat, 0, sent_at, generation)};
  std::optional<Lease> adopted;  // a lower node of this owner: an attempt whose reply was lost
  if (!contenders.empty() && contenders.front().name.starts_with(request.owner + "__lock__"))
    adopted = adopt(request, dir + "/" + contenders.front().name, data, 0, deadline);
  if (!adopted && request.wait_in_line) {  // keep the node: our place in line (README "Waiting")
    mine.ahead = ahead_of(contenders, dir, name);
    wait_in_line(request.owner, std::move(mine));
    return {};
  }
  withdraw(created.value, created.stat.czxid, request.owner, generation, deadline);
  return {std::move(adopted)};
}

// Refuses a single-lock attempt whose listing shows a group's slot nodes, after withdrawing its
// node `mine` (a group claim that sees a lock contender refuses the same way).
void Core::refuse_if_group(const LeaseRequest& request, const std::string& dir,
                           const std::vector<std::string>& children, const Waiting& mine,
                           Deadline deadline) {
  if (!has_slots(children)) return;
  (void)leave_line(request.owner);
  withdraw(mine.path, mine.czxid, request.owner, mine.generation, deadline);
  refuse_other_shape(request, session_.get(dir, deadline), children);
}

// The next attempt of an owner waiting in line: one listing. First in line: the node is taken
// over as the lease (adopt: read, then a version-checked rewrite on this session, tracked
// from that read's send time, as a node of a lost reply is). Still behind another contender:
// contention, the place kept. Node gone (deleted by its session's end or a sweep): nullopt, and
// the caller creates a new node at the end of the line.
std::optional<Acquired> Core::take_turn(const LeaseRequest& request, const std::string& dir,
                                        const Waiting& place, Deadline deadline) {
  Reply listed = session_.children(dir, deadline);
  const std::string name = place.path.substr(dir.size() + 1);
  if (listed.rc != kOk ||
      std::find(listed.children.begin(), listed.children.end(), name) == listed.children.end()) {
    (void)leave_line(request.owner);
    return std::nullopt;
  }
  refuse_if_group(request, dir, listed.children, place, deadline);
  auto contenders = sorted_contenders(listed.children);
  if (contenders.empty() || contenders.front().name != name) {
    Waiting behind = place;
    behind.ahead = ahead_of(contenders, dir, name);
    wait_in_line(request.owner, std::move(behind));
    return Acquired{};
  }
  std::optional<Lease> mine = adopt(request, place.path, node_data(request, 0), 0, deadline);
  // Adopted: tracked as the lease. Not adopted: the node is gone or no longer ours (another
  // session's by now): the next attempt starts a new place.
  (void)leave_line(request.owner);
  return Acquired{std::move(mine)};
}

void Core::refuse(const LeaseRequest& request, int held) const {
  throw detail::group_size_mismatch(config_.scheme, request.lock, held, request.slots);
}

// Throws when a live holder has another shape: contenders of the lock recipe are a single
// leader; slot nodes a group of the size recorded in the lock directory's data.
void Core::refuse_other_shape(const LeaseRequest& request, const Reply& dir,
                              const std::vector<std::string>& children) const {
  if (request.slots >= 1 && !sorted_contenders(children).empty()) refuse(request, 0);
  if (!has_slots(children)) return;
  Json recorded = Json::parse(dir.value, nullptr, false);
  int held = recorded.is_object() ? recorded.value("slots", 0) : 0;
  if (held < 1) held = std::max(request.slots, 1);  // written before sizes were recorded
  if (held != request.slots) refuse(request, held);
}

// Group leases: slot i of lock L is the ephemeral node <root>/L/slot-<i>. A claim is one multi:
// setData of the lock directory to {"slots": N} with the version read before (so every claim is
// ordered after the listing it was chosen from, and a size is only replaced while no slot is
// held) and create-if-absent of the slot. At most N holders exist, a slot index is stable while
// held, and all holders share one N. The fencing token is the slot node's czxid.
Acquired Core::acquire_slot(const LeaseRequest& request, const std::string& dir,
                            Deadline deadline) {
  for (const auto& path : orphans_of(request.owner))  // an attempt whose reply was lost
    if (auto slot = slot_index(path.substr(path.rfind('/') + 1));
        slot && path == dir + "/slot-" + std::to_string(*slot) && *slot < request.slots)
      if (auto mine = adopt(request, path, node_data(request, *slot), *slot, deadline))
        return {std::move(mine)};
  const std::string shape = nlohmann::json{{"slots", request.slots}}.dump();
  // Every claim bumps the directory's version, so of the claims sent against one version only
  // the first succeeds. A claim lost to another claim means one more holder since our listing:
  // after `slots` such races the group was filled by others since we looked, and the attempt
  // answers "held" (the elector waits and tries again while its wait_time lasts): unbounded, a
  // busy group could keep one attempt racing past the local deadline of the lease it finally
  // got. k <= N claimants arriving at once all get in: the i-th one to win lost i - 1 races.
  int lost_races = 0;
  while (true) {  // each round lost a race to another claim; bounded by lost_races and the deadline
    auto [meta, listed] = session_.get_and_list(dir, dir, deadline);
    if (meta.rc == kNoNode) {
      session_.ensure_path(dir, deadline);
      continue;
    }
    refuse_other_shape(request, meta, listed.children);
    const std::set<std::string> taken(listed.children.begin(), listed.children.end());
    int slot = 0;
    while (slot < request.slots && taken.count("slot-" + std::to_string(slot)) != 0) ++slot;
    if (slot == request.slots) return {};
    const std::string path = dir + "/slot-" + std::to_string(slot);
    std::uint64_t generation = 0;  // the session the claim goes out on, named by the call
    const TimePoint sent_at = std::chrono::steady_clock::now();
    std::pair<Reply, Reply> r;
    try {
      r = session_.set_create_and_list(dir, shape, meta.stat.version, path,
                                       node_data(request, slot), CreateMode::ephemeral, deadline,
                                       &generation);
    } catch (const BackendError&) {  // the slot may be ours without us knowing
      add_orphan({path, request.owner, false, generation});
      throw;
    }
    if (r.first.rc == kBadVersion || r.first.rc == kNodeExists) {
      if (++lost_races >= request.slots) return {};
      continue;
    }
    if (r.first.rc == kNoNode) continue;  // the directory went (an empty lock's clean-up)
    if (r.first.rc != kOk) session_.fail(r.first.rc, "claim " + path);
    NodeStat stat = r.first.stat;
    stat.czxid = stat.mzxid;  // one multi, one zxid: the slot's creation
    if (!sorted_contenders(r.second.children).empty()) {  // a single leader came in meanwhile
      withdraw(path, stat.czxid, request.owner, generation, deadline);
      refuse(request, 0);
    }
    return {track(request, path, stat, slot, sent_at, generation)};
  }
}

std::vector<std::string> Core::orphans_of(const std::string& owner) {
  std::vector<std::string> out;
  std::lock_guard lock(mu_);
  for (const auto* list : {&orphans_, &sweeping_})
    for (const Orphan& o : *list)
      if (!o.scan && o.owner == owner) out.push_back(o.path);
  return out;
}

}  // namespace leader::zookeeper
