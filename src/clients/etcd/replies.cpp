#include "replies.hpp"

#include <string_view>
#include <utility>

#include "codec.hpp"
#include "http/json.hpp"
#include "leader/errors.hpp"

namespace leader::etcd {
namespace {

using Json = nlohmann::json;

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "etcd", message);
}

}  // namespace

Reply parse_reply(const std::string& text, long http_status, const std::string& where) {
  Reply r;
  auto line = std::string_view(text).substr(0, text.find('\n'));
  r.body = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded() || !r.body.is_object())
    throw error(ErrorCode::internal,
                where + " answered HTTP " + std::to_string(http_status) + " without a JSON object");
  if (auto res = r.body.find("result"); res != r.body.end() && res->is_object()) {
    nlohmann::json inner = std::move(*res);
    r.body = std::move(inner);
    return r;
  }
  auto err = r.body.find("error");
  if (err == r.body.end()) {
    if (http_status != 200)
      throw error(ErrorCode::internal,
                  where + " answered HTTP " + std::to_string(http_status) + ": " + text);
    return r;
  }
  const nlohmann::json* code =
      http::member(err->is_object() ? *err : r.body, err->is_object() ? "grpc_code" : "code");
  const nlohmann::json* message = http::member(err->is_object() ? *err : r.body, "message");
  if ((code != nullptr && !code->is_number_integer()) ||
      (message != nullptr && !message->is_string()))
    throw error(ErrorCode::internal,
                where + " answered a malformed error: " + std::string(line.substr(0, 200)));
  r.code = code != nullptr ? code->get<int>() : 2;
  if (message != nullptr)
    r.message = message->get<std::string>();
  else if (err->is_object())
    r.message = "unknown error";
  else if (err->is_string())
    r.message = err->get<std::string>();
  if (r.code == kOk) r.code = 2;  // an error object always means failure
  return r;
}

const Json* txn_response(const Json& reply, std::size_t i, const char* kind) {
  const Json* rs = http::member(reply, "responses");
  if (rs == nullptr || !rs->is_array() || rs->size() <= i) return nullptr;
  return http::member((*rs)[i], kind);
}

// The first kv of a Range, DeleteRange (prev_kvs) or Put (prev_kv) response inside a Txn reply.
std::optional<KeyValue> first_kv(const Json& txn_reply, const char* response, const char* field) {
  const Json* r = txn_response(txn_reply, 0, response);
  const Json* kv = r != nullptr ? http::member(*r, field) : nullptr;
  if (kv == nullptr || (kv->is_array() && kv->empty())) return std::nullopt;
  return decode_kv(kv->is_array() ? (*kv)[0] : *kv);
}

std::vector<KeyValue> decode_kvs(const Json& reply, const char* field) {
  std::vector<KeyValue> out;
  if (const Json* kvs = http::member(reply, field); kvs != nullptr && kvs->is_array())
    for (const auto& kv : *kvs) out.push_back(decode_kv(kv));
  return out;
}

bool txn_succeeded(const Json& reply) {
  auto it = reply.find("succeeded");
  return it != reply.end() && it->is_boolean() && it->get<bool>();
}

KeyValue decode_kv(const Json& kv) {
  KeyValue out;
  out.key = bytes_field(kv, "key");
  out.value = bytes_field(kv, "value");
  out.create_revision = int_field(kv, "create_revision");
  out.mod_revision = int_field(kv, "mod_revision");
  out.lease = int_field(kv, "lease");
  return out;
}

// How many levels deep the nested Txn succeeded (0: the outermost), or the innermost reply.
std::variant<int, const Json*> claimed_level(const Json& reply) {
  const Json* node = &reply;
  for (int depth = 0;; ++depth) {
    if (txn_succeeded(*node)) return depth;
    const Json* inner = txn_response(*node, 0, "response_txn");
    if (inner == nullptr) return node;
    node = inner;
  }
}

// The kvs of the i-th Range response of a Txn reply node.
std::vector<KeyValue> range_kvs(const Json& node, std::size_t i) {
  const Json* range = txn_response(node, i, "response_range");
  return range != nullptr ? decode_kvs(*range) : std::vector<KeyValue>();
}

}  // namespace leader::etcd
