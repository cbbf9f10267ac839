// Registers the `consul` URI scheme with leader::open().

#include <memory>

#include "consul_store.hpp"
#include "leader/open.hpp"

extern "C" {
/// Referenced by the linker option of leader::consul so this registration is always linked.
extern const int leader_store_consul_anchor;
const int leader_store_consul_anchor = 0;
}

namespace {

std::shared_ptr<leader::LeaseStore> make_consul(const leader::Uri& uri) {
  return std::make_shared<leader::consul::ConsulStore>(leader::consul::Config::from_uri(uri));
}

const bool kRegistered = [] {
  leader::register_store("consul", make_consul);
  return true;
}();

}  // namespace
