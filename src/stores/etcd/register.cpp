// Registers the etcd store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "etcd_store.hpp"
#include "leader/detail/store_registration.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::etcd::EtcdStore>(leader::etcd::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(etcd, make_store)
