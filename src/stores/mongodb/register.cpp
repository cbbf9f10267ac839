// Registers the `mongodb` URI scheme with leader::open().

#include <memory>

#include "leader/open.hpp"
#include "mongodb_store.hpp"

extern "C" {
/// Referenced by the linker option of leader::mongodb so this registration is always linked.
extern const int leader_store_mongodb_anchor;
const int leader_store_mongodb_anchor = 0;
}

namespace {

std::shared_ptr<leader::LeaseStore> make_mongodb(const leader::Uri& uri) {
  return std::make_shared<leader::mongodb::MongoStore>(leader::mongodb::Config::from_uri(uri));
}

const bool kRegistered = [] {
  leader::register_store("mongodb", make_mongodb);
  return true;
}();

}  // namespace
