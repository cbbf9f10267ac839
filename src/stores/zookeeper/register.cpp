// Registers the "zk" and "zookeeper" URI schemes with leader::open().

#include <memory>

#include "leader/detail/store_registration.hpp"
#include "zk_config.hpp"
#include "zk_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> open_zookeeper(const leader::Uri& uri) {
  return std::make_shared<leader::detail::zk::ZooKeeperStore>(
      leader::detail::zk::parse_config(uri));
}

}  // namespace

LEADER_REGISTER_STORE(zookeeper, open_zookeeper, "zk", "zookeeper")
