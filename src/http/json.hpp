#pragma once
// JSON bodies for leader::http (nlohmann-json): building a JSON request, reading a JSON reply
// and its fields without exceptions (the HTTP stores' replies are untrusted input: a field of an
// unexpected type reads as absent, and each store decides what an absent field means).

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "client.hpp"

namespace leader::http {

/// A request whose body is `body` serialised, with "Content-Type: application/json".
[[nodiscard]] Request json_request(Method method, std::string target, const nlohmann::json& body);
/// The JSON value of `text`, or nullopt when it is not valid JSON; never throws.
[[nodiscard]] std::optional<nlohmann::json> parse_json(std::string_view text);
/// The JSON object of `text`, or nullopt when it is not a JSON object; never throws.
[[nodiscard]] std::optional<nlohmann::json> parse_json_object(std::string_view text);

/// The member `key` of `object`, or null when `object` is no JSON object or has no such member;
/// never throws.
[[nodiscard]] inline const nlohmann::json* member(const nlohmann::json& object,
                                                  std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

/// The member `key` of `object` when `object` is a JSON object and the member holds a T (a
/// string for std::string, a boolean for bool, an integer for integral types, converted as
/// nlohmann's get<T>(); anything for nlohmann::json), else nullopt; never throws.
template <class T>
[[nodiscard]] std::optional<T> field(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* it = member(object, key);
  if (it == nullptr) return std::nullopt;
  bool typed = true;
  if constexpr (std::is_same_v<T, std::string>)
    typed = it->is_string();
  else if constexpr (std::is_same_v<T, bool>)
    typed = it->is_boolean();
  else if constexpr (std::is_integral_v<T>)
    typed = it->is_number_integer();
  if (!typed) return std::nullopt;
  return it->template get<T>();
}

/// The whole of `text` as a decimal T (no sign for unsigned T, no spaces), or nullopt.
template <class T>
[[nodiscard]] std::optional<T> whole_number(std::string_view text) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace leader::http
