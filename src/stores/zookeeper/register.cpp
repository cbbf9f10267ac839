// Registers the "zk" and "zookeeper" URI schemes with leader::open().

#include <memory>

#include "leader/open.hpp"
#include "zk_config.hpp"
#include "zk_store.hpp"

extern "C" {
/// Referenced by consumers' link options so this registration is never dropped.
extern const int leader_store_zookeeper_anchor;
const int leader_store_zookeeper_anchor = 0;
}

namespace leader::detail::zk {
namespace {

std::shared_ptr<LeaseStore> open_zookeeper(const Uri& uri) {
  return std::make_shared<ZooKeeperStore>(parse_config(uri));
}

const bool registered = [] {
  register_store("zk", open_zookeeper);
  register_store("zookeeper", open_zookeeper);
  return true;
}();

}  // namespace
}  // namespace leader::detail::zk
