#include "codec.hpp"

#include <charconv>
#include <optional>
#include <utility>

#include "http/json.hpp"
#include "leader/errors.hpp"

namespace leader::etcd {

std::string base64_decode(std::string_view text) {
  std::optional<std::string> bytes = http::base64_decode(text);
  if (!bytes)
    throw BackendError(ErrorCode::internal, "etcd", "malformed base64 in a gateway reply");
  return std::move(*bytes);
}

std::int64_t int_field(const nlohmann::json& object, const char* name) {
  const nlohmann::json* v = http::member(object, name);
  if (v == nullptr || v->is_null()) return 0;
  if (v->is_number_integer()) return v->get<std::int64_t>();
  if (const auto s = http::field<std::string>(object, name))
    if (const auto n = http::whole_number<std::int64_t>(*s)) return *n;
  throw BackendError(ErrorCode::internal, "etcd",
                     std::string("gateway reply field '") + name + "' is not an int64");
}

std::string bytes_field(const nlohmann::json& object, const char* name) {
  const auto text = http::field<std::string>(object, name);
  return text ? base64_decode(*text) : std::string();
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(end.back());
    if (c < 0xff) {
      ++c;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::string lease_hex(std::int64_t id) {
  char buf[17];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, static_cast<std::uint64_t>(id), 16);
  return std::string(buf, p);
}

std::int64_t ttl_seconds(std::int64_t ms) { return ms <= 1000 ? 1 : (ms + 999) / 1000; }

}  // namespace leader::etcd
