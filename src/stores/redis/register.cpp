// Registers the redis store under the URI schemes of its leader_add_store (SCHEMES in
// CMakeLists.txt).

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "redis_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_store(const leader::Uri& uri) {
  return std::make_shared<leader::redis::RedisStore>(leader::redis::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(redis, make_store)
