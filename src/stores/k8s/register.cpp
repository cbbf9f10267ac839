// Registers the k8s store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "k8s_store.hpp"
#include "leader/detail/store_registration.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::k8s::K8sStore>(leader::k8s::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(k8s, make_store)
