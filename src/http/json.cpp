#include "json.hpp"

namespace leader::http {

Request json_request(Method method, std::string target, const nlohmann::json& body) {
  Request r;
  r.method = method;
  r.target = std::move(target);
  r.headers.push_back({"Content-Type", "application/json"});
  r.body = body.dump();
  return r;
}

std::optional<nlohmann::json> parse_json(std::string_view text) {
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

std::optional<nlohmann::json> parse_json_object(std::string_view text) {
  auto value = parse_json(text);
  if (!value || !value->is_object()) return std::nullopt;
  return value;
}

}  // namespace leader::http
