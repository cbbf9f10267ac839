// The memory store runs the contract in-process; its outage is the store's test hook.

#include "leader/stores/memory.hpp"

#include "contract.hpp"

namespace {

leader::contract::Backend make_memory_backend() {
  // Every "client" shares one in-process state, like clients of one server.
  std::shared_ptr<leader::LeaseStore> shared = leader::make_memory_store();
  leader::contract::Backend b;
  b.name = "memory";
  b.open = [shared] { return shared; };
  b.outage_begin = [shared] { leader::set_memory_store_unavailable(*shared, true); };
  b.outage_end = [shared] { leader::set_memory_store_unavailable(*shared, false); };
  b.lease_unit = std::chrono::milliseconds(600);
  return b;
}

}  // namespace

LEADER_CONTRACT_BACKEND(Memory, make_memory_backend);
