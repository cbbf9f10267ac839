// Registers the memory store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "memory_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return leader::memory::open_named(uri);
}

}  // namespace

LEADER_REGISTER_STORE(memory, make_store)
