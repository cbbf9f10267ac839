// etcd v3 JSON gateway replies: the HTTP body goes through parse_reply (status 200 and an error
// status) and the result through every decoder the store applies to Range, Txn, lease and
// keep-alive replies (clients/etcd/replies.hpp, clients/etcd/codec.hpp, etcd/etcd_store.hpp).

#include "clients/etcd/codec.hpp"
#include "clients/etcd/replies.hpp"
#include "etcd/etcd_store.hpp"
#include "fuzz_support.hpp"

namespace {

using leader::fuzz::expect_value_or_error;
using Json = nlohmann::json;
namespace etcd = leader::etcd;

void decode_kvs(const Json& body) {
  auto kvs = body.find("kvs");
  if (kvs == body.end() || !kvs->is_array()) return;
  for (const Json& kv : *kvs) {
    expect_value_or_error([&] {
      const etcd::KeyValue decoded = etcd::decode_kv(kv);
      leader::Holder h;
      etcd::read_holder_value(decoded.value, decoded.key, h);
      (void)etcd::slot_of(decoded.key);
      (void)etcd::decode_candidate(decoded.value);
    });
  }
}

void decode_body(const Json& body) {
  decode_kvs(body);
  expect_value_or_error([&] {
    const auto level = etcd::claimed_level(body);
    const auto* innermost = std::get_if<const Json*>(&level);
    const Json& node = innermost != nullptr ? **innermost : body;
    (void)etcd::range_kvs(node, 0);
    (void)etcd::recorded_slots(etcd::range_kvs(node, 1));
  });
  expect_value_or_error([&] { (void)etcd::txn_succeeded(body); });
  expect_value_or_error([&] { (void)etcd::first_kv(body, "response_put", "prev_kv"); });
  expect_value_or_error([&] { (void)etcd::first_kv(body, "response_delete_range", "prev_kvs"); });
  expect_value_or_error([&] { (void)etcd::first_kv(body, "response_range", "kvs"); });
  expect_value_or_error([&] { (void)etcd::range_kvs(body, 0); });
  for (const char* field : {"ID", "TTL", "revision"})
    expect_value_or_error([&] { (void)etcd::int_field(body, field); });
  if (auto header = body.find("header"); header != body.end())
    expect_value_or_error([&] { (void)etcd::int_field(*header, "revision"); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = leader::fuzz::text_of(data, size);
  for (long status : {200L, 400L}) {
    expect_value_or_error([&] {
      const etcd::Reply reply = etcd::parse_reply(text, status, "fuzz");
      decode_body(reply.body);
    });
  }
  expect_value_or_error([&] { (void)etcd::base64_decode(text); });
  return 0;
}
