#include "zk_store.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "leader/detail/group_size.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "zk_data.hpp"

namespace leader::zookeeper {
namespace {

using Json = nlohmann::json;

TimePoint steady_now() { return std::chrono::steady_clock::now(); }

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

ZooKeeperStore::ZooKeeperStore(Config config) : config_(config), sessions_(std::move(config)) {}

ZooKeeperStore::~ZooKeeperStore() = default;

std::string ZooKeeperStore::lock_dir(std::string_view lock) const {
  return config_.root + "/" + std::string(lock);
}

std::string ZooKeeperStore::node_data(const LeaseRequest& request, int slot, const Core& core) {
  return Json{{"owner", request.owner},
              {"node_id", request.node_id},
              {"ttl_ms", core.granted(request.ttl).count()},
              {"slot", slot}}
      .dump();
}

namespace {
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

Acquired ZooKeeperStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  const std::string dir = lock_dir(request.lock);
  if (auto holder = Core::holding(request.owner))  // this owner asks again: its own lease
    if (auto mine = holder->reacquire(request, dir, deadline)) return {std::move(mine)};
  auto core = sessions_.for_ttl(request.ttl, deadline);
  Core::Acquiring busy(*core, request.owner);
  return request.slots >= 1 ? acquire_slot(*core, request, dir, deadline)
                            : acquire_single(*core, request, dir, deadline);
}

Acquired ZooKeeperStore::acquire_single(Core& core, const LeaseRequest& request,
                                        const std::string& dir, Deadline deadline) {
  Session& session = core.session();
  if (request.wait_in_line)  // waiting in line since an earlier attempt: is it our turn?
    if (auto place = core.place_of(request.owner))
      if (auto turn = take_turn(core, request, dir, *place, deadline)) return std::move(*turn);
  // The session the create goes out on: the call replaces an expired session first, and an
  // orphan or lease recorded under the old generation would be taken for gone with it.
  std::uint64_t generation = session.generation();
  const TimePoint sent_at = steady_now();
  const std::string prefix = dir + "/" + request.owner + "__lock__";
  const std::string data = node_data(request, 0, core);
  Reply created, listed;
  try {  // one round trip: the create and the listing behind it
    std::tie(created, listed) = session.create_and_list(
        prefix, data, CreateMode::ephemeral_sequential, dir, deadline, &generation);
  } catch (const BackendError&) {  // the node may exist without us knowing its sequence
    core.add_orphan({dir, request.owner, true, generation});
    throw;
  }
  if (created.rc != kOk) session.fail(created.rc, "create " + prefix);
  const std::string name = created.value.substr(dir.size() + 1);
  Waiting mine{created.value, created.stat.czxid, generation, {}};
  refuse_if_group(core, request, dir, listed.children, mine, deadline);
  auto contenders = sorted_contenders(listed.children);
  if (!contenders.empty() && contenders.front().name == name)
    return {core.track(request, created.value, created.stat, 0, sent_at, generation)};
  std::optional<Lease> adopted;  // a lower node of this owner: an attempt whose reply was lost
  if (!contenders.empty() && contenders.front().name.starts_with(request.owner + "__lock__"))
    adopted = core.adopt(request, dir + "/" + contenders.front().name, data, 0, deadline);
  if (!adopted && request.wait_in_line) {  // keep the node: our place in line (README "Waiting")
    mine.ahead = ahead_of(contenders, dir, name);
    core.wait_in_line(request.owner, std::move(mine));
    return {};
  }
  core.withdraw(created.value, created.stat.czxid, request.owner, generation, deadline);
  return {std::move(adopted)};
}

// Refuses a single-lock attempt whose listing shows a group's slot nodes, after withdrawing its
// node `mine` (a group claim that sees a lock contender refuses the same way).
void ZooKeeperStore::refuse_if_group(Core& core, const LeaseRequest& request,
                                     const std::string& dir,
                                     const std::vector<std::string>& children, const Waiting& mine,
                                     Deadline deadline) {
  if (!has_slots(children)) return;
  (void)core.leave_line(request.owner);
  core.withdraw(mine.path, mine.czxid, request.owner, mine.generation, deadline);
  refuse_other_shape(request, core.session().get(dir, deadline), children);
}

// The next attempt of an owner waiting in line: one listing. First in line: the node is taken
// over as the lease (Core::adopt: read, then a version-checked rewrite on this session, tracked
// from that read's send time, as a node of a lost reply is). Still behind another contender:
// contention, the place kept. Node gone (deleted by its session's end or a sweep): nullopt, and
// the caller creates a new node at the end of the line.
std::optional<Acquired> ZooKeeperStore::take_turn(Core& core, const LeaseRequest& request,
                                                  const std::string& dir, const Waiting& place,
                                                  Deadline deadline) {
  Reply listed = core.session().children(dir, deadline);
  const std::string name = place.path.substr(dir.size() + 1);
  if (listed.rc != kOk ||
      std::find(listed.children.begin(), listed.children.end(), name) == listed.children.end()) {
    (void)core.leave_line(request.owner);
    return std::nullopt;
  }
  refuse_if_group(core, request, dir, listed.children, place, deadline);
  auto contenders = sorted_contenders(listed.children);
  if (contenders.empty() || contenders.front().name != name) {
    Waiting behind = place;
    behind.ahead = ahead_of(contenders, dir, name);
    core.wait_in_line(request.owner, std::move(behind));
    return Acquired{};
  }
  std::optional<Lease> mine =
      core.adopt(request, place.path, node_data(request, 0, core), 0, deadline);
  // Adopted: tracked as the lease. Not adopted: the node is gone or no longer ours (another
  // session's by now): the next attempt starts a new place.
  (void)core.leave_line(request.owner);
  return Acquired{std::move(mine)};
}

void ZooKeeperStore::leave_line(const LeaseRequest& request, Deadline deadline) noexcept {
  if (request.slots >= 1 || !request.wait_in_line) return;
  try {
    for (const auto& core : sessions_.all())
      if (auto place = core->leave_line(request.owner))
        core->withdraw(place->path, place->czxid, request.owner, place->generation, deadline);
  } catch (...) {  // allocation failure at worst; the node then ends with its session
  }
}

void ZooKeeperStore::refuse(const LeaseRequest& request, int held) const {
  throw detail::group_size_mismatch(config_.scheme, request.lock, held, request.slots);
}

// Throws when a live holder has another shape: contenders of the lock recipe are a single
// leader; slot nodes a group of the size recorded in the lock directory's data.
void ZooKeeperStore::refuse_other_shape(const LeaseRequest& request, const Reply& dir,
                                        const std::vector<std::string>& children) const {
  if (request.slots >= 1 && !sorted_contenders(children).empty()) refuse(request, 0);
  if (!has_slots(children)) return;
  Json recorded = Json::parse(dir.value, nullptr, false);
  int held = recorded.is_object() ? recorded.value("slots", 0) : 0;
  if (held < 1) held = std::max(request.slots, 1);  // written before sizes were recorded
  if (held != request.slots) refuse(request, held);
}

Renewal ZooKeeperStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  auto core = Core::holding(lease.owner);  // only the owning session can confirm a lease
  return core ? core->renew(lease, ttl, deadline) : Renewal{};
}

std::vector<BatchRenewal> ZooKeeperStore::renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  // Only the owning session can confirm a lease: group by it (a lease no Core holds is lost).
  std::vector<std::pair<std::shared_ptr<Core>, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    auto core = Core::holding(requests[i].lease->owner);
    if (!core) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == core; });
    if (g == groups.end()) g = groups.insert(groups.end(), {core, {}});
    g->second.push_back(i);
  }
  for (const auto& [core, indices] : groups) core->renew_batch(requests, indices, deadline, out);
  return out;
}

LeaseStatus ZooKeeperStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  if (auto core = Core::holding(lease.owner)) return core->release(lease, keep_for, deadline);
  return release_untracked(lease, keep_for, deadline);
}

// A lease of another session (another process, or a store of this process that closed its
// session): find the node by owner token and delete it, checking the fencing token first. The
// lease's own timer or session ends it no earlier than any keep_for, so keep_for keeps it.
LeaseStatus ZooKeeperStore::release_untracked(const Lease& lease, Duration keep_for,
                                              Deadline deadline) {
  const std::string dir = lock_dir(lease.lock);
  std::string path;
  if (lease.slots >= 1) {
    path = dir + "/slot-" + std::to_string(lease.slot);
  } else {
    Reply kids = session().children(dir, deadline);
    const std::string prefix = lease.owner + "__lock__";
    for (const auto& c : kids.children)
      if (c.starts_with(prefix))
        path = dir + "/" + c;  // NOLINT(performance-inefficient-string-concatenation)
    if (path.empty()) return LeaseStatus::lost;
  }
  Reply r = session().get(path, deadline);
  if (r.rc != kOk || r.stat.czxid != static_cast<std::int64_t>(lease.fencing_token))
    return LeaseStatus::lost;
  if (recorded_owner(r.value) != lease.owner) return LeaseStatus::lost;
  if (keep_for.count() > 0) return LeaseStatus::ok;
  return session().remove(path, r.stat.version, deadline).rc == kOk ? LeaseStatus::ok
                                                                    : LeaseStatus::lost;
}

LockState ZooKeeperStore::inspect(std::string_view lock, Deadline deadline) {
  LockState state;
  state.lock = std::string(lock);
  const std::string dir = lock_dir(lock);
  Reply kids = session().children(dir, deadline);
  if (kids.rc == kNoNode) return state;
  holders_of(dir, kids.children, deadline, state);
  return state;
}

std::vector<LockState> ZooKeeperStore::list_locks(std::string_view prefix, Deadline deadline) {
  Reply kids = session().children(config_.root, deadline);
  if (kids.rc == kNoNode) return {};  // nothing was ever locked under this root
  if (kids.rc != kOk) session().fail(kids.rc, "list " + config_.root);
  std::set<std::string> names;
  for (const auto& child : kids.children)
    if (child.compare(0, prefix.size(), prefix) == 0) names.insert(child);
  return detail::held_locks(*this, names, deadline);
}

void ZooKeeperStore::holders_of(const std::string& dir, const std::vector<std::string>& children,
                                Deadline deadline, LockState& out) {
  std::vector<std::pair<std::string, int>> nodes;  // name, slot
  auto contenders = sorted_contenders(children);
  if (!contenders.empty()) nodes.emplace_back(contenders.front().name, 0);
  for (const auto& c : children)
    if (auto slot = slot_index(c)) nodes.emplace_back(c, *slot);
  std::vector<Pending> pending;
  pending.reserve(nodes.size());
  const std::string parent = dir + "/";
  for (const auto& [name, slot] : nodes)
    pending.push_back(session().get_async(parent + name, deadline));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Reply r = pending[i].wait(deadline, "get " + dir + "/" + nodes[i].first);
    if (r.rc != kOk) continue;  // released meanwhile
    Holder h;
    h.fencing_token = static_cast<std::uint64_t>(r.stat.czxid);
    h.slot = nodes[i].second;
    h.expires_in = session().negotiated_timeout();
    read_holder_data(r.value, nodes[i].first, h);
    if (auto core = Core::holding(h.owner); core)
      if (auto mine = core->held(h.owner); mine && mine->czxid == r.stat.czxid)
        h.expires_in = std::max(
            Duration(0), std::chrono::duration_cast<Duration>(mine->expire_at - steady_now()));
    out.holders.push_back(std::move(h));
  }
  std::sort(out.holders.begin(), out.holders.end(),
            [](const Holder& a, const Holder& b) { return a.slot < b.slot; });
}

}  // namespace leader::zookeeper
