#pragma once
// Builders for the JSON bodies of etcd v3 requests (rpc.proto field names; int64 as strings).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "codec.hpp"

namespace leader::etcd::ops {

using Json = nlohmann::json;

/// Compare: `field` of `key` (etcd's Compare.CompareTarget `target`: "CREATE" for
/// create_revision, "MOD", "VALUE", "LEASE") `result` ("EQUAL", "NOT_EQUAL"...) `value`.
inline Json compare(const std::string& key, const char* target, const char* field, Json value,
                    const char* result = "EQUAL") {
  return {{"key", base64_encode(key)}, {"target", target}, {"result", result}, {field, value}};
}

/// Compare: the create revision of `key` (of every key in [key, range_end) if given) equals `rev`.
inline Json create_revision_is(const std::string& key, std::int64_t rev,
                               const std::string& range_end = "") {
  Json c = compare(key, "CREATE", "create_revision", std::to_string(rev));
  if (!range_end.empty()) c["range_end"] = base64_encode(range_end);
  return c;
}

/// Compare: the mod revision of `key` equals `rev`.
inline Json mod_revision_is(const std::string& key, std::int64_t rev) {
  return compare(key, "MOD", "mod_revision", std::to_string(rev));
}

/// Appends to `out` the JSON text of the compare "`field` of the key whose base64 is `key_b64`
/// EQUAL to `value`", `target` naming the field as etcd's Compare.CompareTarget does
/// ("CREATE" for create_revision, "LEASE" for lease): the same object compare() builds. For the
/// batched renewal's hot path (two compares per held key every renewal): written as text, because
/// base64 and decimal digits need no JSON escaping, instead of one nlohmann object (a std::map of
/// four strings) per compare.
inline void append_equal_compare(std::string& out, std::string_view key_b64,
                                 std::string_view target, std::string_view field,
                                 std::int64_t value) {
  out += R"({"key":")";
  out += key_b64;
  out += R"(","target":")";
  out += target;
  out += R"(","result":"EQUAL",")";
  out += field;
  out += R"(":")";
  out += std::to_string(value);
  out += R"("})";
}

/// Compare: `key` exists and its value equals `value` (a missing key never matches).
inline Json value_is(const std::string& key, const std::string& value) {
  return compare(key, "VALUE", "value", base64_encode(value));
}

/// Compare: no key in [key, range_end) has the value `value`. etcd fails a VALUE compare over a
/// range without keys: callers use it where the range is known not to be empty.
inline Json no_value_is(const std::string& key, const std::string& value,
                        const std::string& range_end) {
  Json c = compare(key, "VALUE", "value", base64_encode(value), "NOT_EQUAL");
  c["range_end"] = base64_encode(range_end);
  return c;
}

/// A Put request body attaching `key` to `lease` (0: no lease).
inline Json put(const std::string& key, const std::string& value, std::int64_t lease,
                bool prev_kv = false) {
  Json p = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) p["lease"] = std::to_string(lease);
  if (prev_kv) p["prev_kv"] = true;
  return p;
}

/// A Put request body that moves `key` to `lease`, keeping its value and create revision.
inline Json move_to_lease(const std::string& key, std::int64_t lease) {
  return {{"key", base64_encode(key)},
          {"lease", std::to_string(lease)},
          {"ignore_value", true},
          {"prev_kv", true}};
}

/// A Range request body: every key starting with `prefix`, by create revision ascending.
inline Json range_prefix(const std::string& prefix, std::int64_t limit = 0) {
  Json r = {{"key", base64_encode(prefix)},
            {"range_end", base64_encode(prefix_end(prefix))},
            {"sort_order", "ASCEND"},
            {"sort_target", "CREATE"}};
  if (limit > 0) r["limit"] = std::to_string(limit);
  return r;
}

/// A Range request body for one key (`keys_only`: no value, the revisions and lease still).
inline Json range_key(const std::string& key, bool keys_only = false) {
  Json r = {{"key", base64_encode(key)}};
  if (keys_only) r["keys_only"] = true;
  return r;
}

/// A DeleteRange request body for one key, returning the deleted pair.
inline Json delete_key(const std::string& key) {
  return {{"key", base64_encode(key)}, {"prev_kv", true}};
}

/// A Txn request body.
inline Json txn(Json compare, Json success, Json failure = Json::array()) {
  return {{"compare", std::move(compare)},
          {"success", std::move(success)},
          {"failure", std::move(failure)}};
}

}  // namespace leader::etcd::ops
