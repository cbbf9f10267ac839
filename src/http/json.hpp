#pragma once
// JSON bodies for leader::http (nlohmann-json): building a JSON request and reading a JSON reply
// without exceptions.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "client.hpp"

namespace leader::http {

/// A request whose body is `body` serialised, with "Content-Type: application/json".
[[nodiscard]] Request json_request(Method method, std::string target, const nlohmann::json& body);
/// The JSON value of `text`, or nullopt when it is not valid JSON; never throws.
[[nodiscard]] std::optional<nlohmann::json> parse_json(std::string_view text);
/// The JSON object of `text`, or nullopt when it is not a JSON object; never throws.
[[nodiscard]] std::optional<nlohmann::json> parse_json_object(std::string_view text);

}  // namespace leader::http
