// LeaderGroupElector: the engine with max_leaders slots.

#include "leader/group.hpp"

#include <algorithm>
#include <utility>

#include "engine/election_core.hpp"

namespace leader {

namespace {
std::shared_ptr<detail::ElectionCore> group_core(std::shared_ptr<LeaseStore> store,
                                                 const GroupOptions& options, ElectorHooks hooks) {
  options.validate();
  return std::make_shared<detail::ElectionCore>(std::move(store), options.election,
                                                options.max_leaders, std::move(hooks));
}
}  // namespace

LeaderGroupElector::LeaderGroupElector(std::shared_ptr<LeaseStore> store,
                                       const GroupOptions& options, ElectorHooks hooks)
    : Elector(group_core(std::move(store), options, std::move(hooks)), {}) {}

LeaderGroupElector LeaderGroupElector::for_tenant(std::string_view tenant) const {
  validate_tenant_id(tenant);
  return LeaderGroupElector(core_, std::string(tenant));
}

int LeaderGroupElector::max_leaders() const { return core_->slots(); }

GroupState LeaderGroupElector::inspect_group(std::string_view lock) const {
  LockState s = inspect(lock);
  GroupState g;
  g.lock = s.lock;
  g.max_leaders = max_leaders();
  g.active = static_cast<int>(s.holders.size());
  g.available = std::max(0, g.max_leaders - g.active);
  g.holders = std::move(s.holders);
  return g;
}

}  // namespace leader
