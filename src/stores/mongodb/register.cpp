// Registers the mongodb store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "mongodb_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::mongodb::MongoStore>(leader::mongodb::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(mongodb, make_store)
