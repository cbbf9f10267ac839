// Registers the `dynamodb` URI scheme with leader::open().

#include <memory>

#include "dynamodb_store.hpp"
#include "leader/open.hpp"

extern "C" {
/// Referenced by the linker option of leader::dynamodb so this registration is always linked.
extern const int leader_store_dynamodb_anchor;
const int leader_store_dynamodb_anchor = 0;
}

namespace {

std::shared_ptr<leader::LeaseStore> make_dynamodb(const leader::Uri& uri) {
  return std::make_shared<leader::dynamodb::DynamoStore>(leader::dynamodb::Config::from_uri(uri));
}

const bool kRegistered = [] {
  leader::register_store("dynamodb", make_dynamodb);
  return true;
}();

}  // namespace
