#pragma once
// Decoding of etcd JSON gateway replies, declared here so that the fuzz harness (tests/fuzz) can
// feed them any reply. Malformed replies throw BackendError(internal).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gateway.hpp"

namespace leader::etcd {

/// One key read back from etcd.
struct KeyValue {
  std::string key;
  std::string value;
  std::int64_t create_revision = 0;
  std::int64_t mod_revision = 0;
  std::int64_t lease = 0;
};

/// etcd's status and body out of one reply: unary errors are {"error","code","message"},
/// streamed ones {"error":{"grpc_code","message"}}, streamed results {"result":{...}}.
[[nodiscard]] Reply parse_reply(const std::string& text, long http_status,
                                const std::string& where);
/// True when a Txn reply says its compare held (`succeeded` is a JSON true; etcd omits it when
/// false).
[[nodiscard]] bool txn_succeeded(const nlohmann::json& reply);
/// Decodes one `kvs` entry of a Range reply.
[[nodiscard]] KeyValue decode_kv(const nlohmann::json& kv);
/// The first kv of a Range, DeleteRange (prev_kvs) or Put (prev_kv) response inside a Txn reply.
[[nodiscard]] std::optional<KeyValue> first_kv(const nlohmann::json& txn_reply,
                                               const char* response, const char* field);
/// The `kind` member ("response_range", "response_txn"...) of the i-th response of a Txn
/// reply, or null.
[[nodiscard]] const nlohmann::json* txn_response(const nlohmann::json& reply, std::size_t i,
                                                 const char* kind);
/// The kvs of `reply`'s array `field` (a Range's "kvs", a DeleteRange's "prev_kvs"), decoded.
[[nodiscard]] std::vector<KeyValue> decode_kvs(const nlohmann::json& reply,
                                               const char* field = "kvs");
/// How many levels deep a nested Txn succeeded (0: the outermost; a failed level's first response
/// is the next level's Txn), or the innermost reply when none did.
[[nodiscard]] std::variant<int, const nlohmann::json*> claimed_level(const nlohmann::json& reply);
/// The kvs of the i-th Range response of a Txn reply node.
[[nodiscard]] std::vector<KeyValue> range_kvs(const nlohmann::json& node, std::size_t i);

}  // namespace leader::etcd
