// DynamoDB JSON replies: the HTTP body through parse_response (200 and an error status), lease
// items through held_slots, acquire's UPDATED_NEW attributes, candidate items of a Query, error
// types, and the HTTP Date header the server-time judge reads.

#include "dynamodb/item.hpp"
#include "dynamodb/replies.hpp"
#include "fuzz_support.hpp"

namespace {

using leader::fuzz::expect_value_or_error;
using Json = nlohmann::json;
namespace ddb = leader::dynamodb;

void decode_body(const Json& body) {
  if (auto item = body.find("Item"); item != body.end() && item->is_object())
    expect_value_or_error([&] { (void)ddb::held_slots(*item); });
  if (auto attrs = body.find("Attributes"); attrs != body.end() && attrs->is_object()) {
    expect_value_or_error([&] { (void)ddb::held_slots(*attrs); });
    expect_value_or_error([&] { (void)ddb::get_n(*attrs, ddb::SlotNames(0).token); });
  }
  if (auto items = body.find("Items"); items != body.end() && items->is_array())
    for (const Json& item : *items)
      if (item.is_object()) expect_value_or_error([&] { (void)ddb::decode_candidate(item); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = leader::fuzz::text_of(data, size);
  for (long status : {200L, 400L}) {
    expect_value_or_error([&] {
      const ddb::Response r = ddb::parse_response(text, status);
      (void)ddb::error_code_for(r.error_type, r.http_status);
      decode_body(r.body);
    });
  }
  expect_value_or_error([&] { (void)ddb::parse_http_date(text.substr(0, text.find('\n'))); });
  return 0;
}
