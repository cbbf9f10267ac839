#pragma once
/// @file group.hpp
/// LeaderGroupElector: up to max_leaders concurrent holders of one lock, each in its own slot.

#include "leader/elector.hpp"

namespace leader {

/// A snapshot of a group lock.
struct GroupState {
  std::string lock{};
  int max_leaders = 0;
  int active = 0;
  int available = 0;
  std::vector<Holder> holders{};  ///< ordered by slot
};

/// N-slot election: never more than max_leaders holders; each knows its slot (ctx.slot()).
class LeaderGroupElector : public Elector {
 public:
  /// Validates `options` (InvalidArgument on a broken rule).
  explicit LeaderGroupElector(std::shared_ptr<LeaseStore> store, const GroupOptions& options = {},
                              ElectorHooks hooks = {});
  /// An elector whose lock names live in the scope of `tenant`.
  [[nodiscard]] LeaderGroupElector for_tenant(std::string_view tenant) const;
  /// Active and available slots with their holders.
  [[nodiscard]] GroupState inspect_group(std::string_view lock) const;
  /// The number of slots.
  [[nodiscard]] int max_leaders() const;

 private:
  LeaderGroupElector(std::shared_ptr<detail::ElectionCore> core, std::string tenant)
      : Elector(std::move(core), std::move(tenant)) {}
};

}  // namespace leader
