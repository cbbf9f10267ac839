#pragma once
// The DynamoDB JSON API client: signed (SigV4) POSTs of `DynamoDB_20120810.<Op>` requests over
// leader::http (keep-alive pool, TLS, deadline). Thread-safe.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "http/client.hpp"
#include "leader/errors.hpp"
#include "leader/time.hpp"

namespace leader::dynamodb {

/// DynamoDB's answer to one call.
struct Response {
  long http_status = 0;
  std::string error_type;  ///< e.g. "ConditionalCheckFailedException"; empty on success
  std::string message;     ///< DynamoDB's error text
  nlohmann::json body;     ///< the reply object (an empty object when the reply had no body)
  /// The server's clock from the HTTP `Date` header (whole seconds, so the true time at the
  /// answer is in [server_time_ms, server_time_ms + 1000)); nullopt when absent or unparsable.
  std::optional<std::int64_t> server_time_ms;
  [[nodiscard]] bool ok() const { return http_status == 200 && error_type.empty(); }
  /// True when the call's ConditionExpression did not hold (the normal "contended" outcome).
  [[nodiscard]] bool condition_failed() const {
    return error_type == "ConditionalCheckFailedException";
  }
};

/// A client of one DynamoDB endpoint.
class Client {
 public:
  /// Keeps `config`; connects lazily on the first call.
  explicit Client(Config config);

  /// Sends `request` as operation `op` (e.g. "UpdateItem") and returns DynamoDB's answer.
  /// Transport failures throw BackendError (leader::http): unavailable (certainly not sent),
  /// deadline_exceeded (possibly sent, no complete answer before `deadline`: outcome unknown),
  /// failed_precondition (TLS).
  [[nodiscard]] Response post(std::string_view op, const nlohmann::json& request,
                              Deadline deadline);
  /// As post(), but any error answer throws the BackendError chosen by fail().
  nlohmann::json call(std::string_view op, const nlohmann::json& request, Deadline deadline);
  /// Throws the BackendError for an error answer; `what` names the operation.
  [[noreturn]] void fail(const Response& response, std::string_view what) const;
  /// The settings this client was made from.
  [[nodiscard]] const Config& config() const { return config_; }

 private:
  Config config_;
  http::Client http_;
};

/// Parses an HTTP `Date` value (RFC 7231 IMF-fixdate, e.g. "Sun, 06 Nov 1994 08:49:37 GMT") to
/// epoch milliseconds.
[[nodiscard]] std::optional<std::int64_t> parse_http_date(std::string_view value);

/// How a DynamoDB error type maps to an ErrorCode (exposed for tests).
[[nodiscard]] ErrorCode error_code_for(std::string_view error_type, long http_status);

}  // namespace leader::dynamodb
