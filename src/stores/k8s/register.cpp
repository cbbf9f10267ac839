// Registers the `k8s` URI scheme with leader::open().

#include <memory>

#include "k8s_store.hpp"
#include "leader/open.hpp"

extern "C" {
/// Referenced by the linker option of leader::k8s so this registration is always linked.
extern const int leader_store_k8s_anchor;
const int leader_store_k8s_anchor = 0;
}

namespace {

std::shared_ptr<leader::LeaseStore> make_k8s(const leader::Uri& uri) {
  return std::make_shared<leader::k8s::K8sStore>(leader::k8s::Config::from_uri(uri));
}

const bool kRegistered = [] {
  leader::register_store("k8s", make_k8s);
  return true;
}();

}  // namespace
