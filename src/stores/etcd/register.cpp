// Registers the `etcd` and `etcds` URI schemes with leader::open().

#include <memory>

#include "etcd_store.hpp"
#include "leader/open.hpp"

extern "C" {
/// Referenced by the linker option of leader::etcd so this registration is always linked.
extern const int leader_store_etcd_anchor;
const int leader_store_etcd_anchor = 0;
}

namespace {

std::shared_ptr<leader::LeaseStore> make_etcd(const leader::Uri& uri) {
  return std::make_shared<leader::etcd::EtcdStore>(leader::etcd::Config::from_uri(uri));
}

const bool kRegistered = [] {
  leader::register_store("etcd", make_etcd);
  leader::register_store("etcds", make_etcd);
  return true;
}();

}  // namespace
