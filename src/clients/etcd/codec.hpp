#pragma once
// Encoding helpers of the etcd v3 JSON gateway: keys and values are base64, int64 are strings.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "http/base64.hpp"

namespace leader::etcd {

using http::base64_encode;  // keys and values are sent as standard padded base64
/// Decodes standard base64; throws BackendError(internal) on malformed input.
[[nodiscard]] std::string base64_decode(std::string_view text);

/// An int64 field of a gateway reply (a JSON string, a number, or absent meaning 0).
[[nodiscard]] std::int64_t int_field(const nlohmann::json& object, const char* name);
/// A base64 bytes field of a gateway reply, decoded ("" when absent).
[[nodiscard]] std::string bytes_field(const nlohmann::json& object, const char* name);

/// The end of the key range holding every key that starts with `prefix` (etcd's prefix end).
[[nodiscard]] std::string prefix_end(std::string_view prefix);

/// `id` as lower-case hex without padding, as Go's `%x` prints it (concurrency.Mutex key names).
[[nodiscard]] std::string lease_hex(std::int64_t id);

/// Seconds for an etcd lease TTL: `ms` rounded up, at least 1.
[[nodiscard]] std::int64_t ttl_seconds(std::int64_t ms);

}  // namespace leader::etcd
