// Registers the `etcd` and `etcds` URI schemes with leader::open().

#include <memory>

#include "etcd_store.hpp"
#include "leader/detail/store_registration.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_etcd(const leader::Uri& uri) {
  return std::make_shared<leader::etcd::EtcdStore>(leader::etcd::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(etcd, make_etcd, "etcd", "etcds")
