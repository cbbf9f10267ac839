#include "client.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>

#include "replies.hpp"
#include "sigv4.hpp"

namespace leader::dynamodb {
namespace {

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "dynamodb", message);
}

http::ClientOptions http_options(const Config& config) {
  http::ClientOptions o;
  o.store = "dynamodb";
  o.base_urls = {config.endpoint};
  o.tls.ca_file = config.ca_file;
  o.connect_timeout = config.connect_timeout;
  o.request_timeout = config.request_timeout;
  o.secrets = {config.secret_access_key, config.session_token};
  return o;
}

}  // namespace

// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" -> the part after '#'.
Response parse_response(const std::string& text, long status) {
  Response r;
  r.http_status = status;
  r.body = text.empty() ? nlohmann::json::object()
                        : nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded() || !r.body.is_object()) {
    r.error_type = status == 200 ? "MalformedReply" : "HTTP" + std::to_string(status);
    r.message = text.substr(0, 200);
    r.body = nlohmann::json::object();
    return r;
  }
  if (status == 200) return r;
  auto field = [&](const char* name, const std::string& fallback) {
    auto it = r.body.find(name);
    return it != r.body.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  std::string type = field("__type", "HTTP" + std::to_string(status));
  r.error_type = type.substr(type.find('#') + 1);
  r.message = field("message", field("Message", ""));
  return r;
}

namespace {

// The signed header set of one call: content-type, host, x-amz-date, x-amz-target (and the
// session token), then Authorization.
std::vector<http::Header> signed_headers(const Config& config, std::string_view op,
                                         const std::string& payload) {
  const std::string date = amz_date(std::chrono::system_clock::now());
  SigningRequest sr;
  sr.headers = {{"content-type", "application/x-amz-json-1.0"},
                {"host", config.authority},
                {"x-amz-date", date},
                {"x-amz-target", "DynamoDB_20120810." + std::string(op)}};
  if (!config.session_token.empty())
    sr.headers.emplace_back("x-amz-security-token", config.session_token);
  sr.payload = payload;
  sr.region = config.region;
  sr.amz_date = date;
  const Signature sig = sign_v4(sr, config.access_key_id, config.secret_access_key);
  std::vector<http::Header> out;
  for (const auto& [name, value] : sr.headers)
    out.push_back({name, value, /*secret=*/name == "x-amz-security-token"});
  out.push_back({"Authorization", sig.authorization});
  return out;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view value) {
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t secs = timegm(&tm);
  if (secs == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(secs) * 1000;
}

ErrorCode error_code_for(std::string_view type, long http_status) {
  static constexpr std::array<std::string_view, 8> kTransient = {
      "ProvisionedThroughputExceededException",
      "ThrottlingException",
      "RequestLimitExceeded",
      "LimitExceededException",
      "InternalServerError",
      "ServiceUnavailable",
      "TransactionConflictException",
      "ItemCollectionSizeLimitExceededException"};
  static constexpr std::array<std::string_view, 10> kConfig = {
      "UnrecognizedClientException",  "InvalidSignatureException",
      "AccessDeniedException",        "MissingAuthenticationTokenException",
      "IncompleteSignatureException", "ExpiredTokenException",
      "InvalidClientTokenId",         "SignatureDoesNotMatch",
      "ResourceNotFoundException",    "ResourceInUseException"};
  if (std::find(kTransient.begin(), kTransient.end(), type) != kTransient.end())
    return ErrorCode::unavailable;
  if (std::find(kConfig.begin(), kConfig.end(), type) != kConfig.end())
    return ErrorCode::failed_precondition;
  if (http_status >= 500) return ErrorCode::unavailable;
  return ErrorCode::internal;
}

Client::Client(Config config) : config_(std::move(config)), http_(http_options(config_)) {}

Response Client::post(std::string_view op, const nlohmann::json& request, Deadline deadline) {
  if (deadline.expired())
    throw error(ErrorCode::deadline_exceeded,
                "DynamoDB " + std::string(op) + " at " + config_.endpoint + ": deadline passed");
  http::Request req{http::Method::post, "/", {}, request.dump()};
  req.headers = signed_headers(config_, op, req.body);
  http::Response reply = http_.send(req, deadline);
  Response r = parse_response(reply.body, reply.status);
  if (auto date = reply.header("date")) r.server_time_ms = parse_http_date(*date);
  return r;
}

nlohmann::json Client::call(std::string_view op, const nlohmann::json& request, Deadline deadline) {
  Response r = post(op, request, deadline);
  if (!r.ok()) fail(r, op);
  return std::move(r.body);
}

void Client::fail(const Response& r, std::string_view what) const {
  std::string text = "DynamoDB " + std::string(what) + " on table '" + config_.table + "' at " +
                     config_.endpoint + " failed: " + r.error_type;
  if (!r.message.empty()) text += ": " + http_.redact(r.message);
  throw error(error_code_for(r.error_type, r.http_status), text);
}

}  // namespace leader::dynamodb
