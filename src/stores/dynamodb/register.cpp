// Registers the `dynamodb` URI scheme with leader::open().

#include <memory>

#include "dynamodb_store.hpp"
#include "leader/detail/store_registration.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_dynamodb(const leader::Uri& uri) {
  return std::make_shared<leader::dynamodb::DynamoStore>(leader::dynamodb::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(dynamodb, make_dynamodb, "dynamodb")
