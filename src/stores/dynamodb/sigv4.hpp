#pragma once
// AWS Signature Version 4 (HMAC-SHA256 through OpenSSL libcrypto), as AWS documents it in
// "Create a signed AWS API request". Header-based signing only (no presigned URLs).

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leader::dynamodb {

/// One request to sign.
struct SigningRequest {
  std::string method = "POST";
  std::string path = "/";  ///< canonical (already URI-encoded) path
  std::string query;       ///< canonical query string (sorted, encoded); empty for none
  std::vector<std::pair<std::string, std::string>>
      headers;               ///< every header to sign, host included
  std::string_view payload;  ///< the body
  std::string region;
  std::string service = "dynamodb";
  std::string amz_date;  ///< the X-Amz-Date value, e.g. "20150830T123600Z"
};

/// The parts of a signature, for tests and for the Authorization header.
struct Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signed_headers;  ///< e.g. "host;x-amz-date"
  std::string signature;       ///< 64 lower-case hex digits
  std::string authorization;   ///< the full Authorization header value
};

/// Signs `request` with the given key pair.
[[nodiscard]] Signature sign_v4(const SigningRequest& request, std::string_view access_key_id,
                                std::string_view secret_access_key);

/// Lower-case hex SHA-256 of `data`.
[[nodiscard]] std::string sha256_hex(std::string_view data);

/// `t` as an X-Amz-Date value (UTC, ISO 8601 basic format).
[[nodiscard]] std::string amz_date(std::chrono::system_clock::time_point t);

}  // namespace leader::dynamodb
