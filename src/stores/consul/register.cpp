// Registers the consul store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "consul_store.hpp"
#include "leader/detail/store_registration.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::consul::ConsulStore>(leader::consul::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(consul, make_store)
