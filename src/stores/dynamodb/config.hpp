#pragma once
// Settings of the DynamoDB store, parsed from `dynamodb://` URIs.

#include <string>

#include "leader/time.hpp"
#include "leader/uri.hpp"

namespace leader::dynamodb {

/// Client settings of one DynamoDB endpoint and table.
struct Config {
  std::string endpoint;   ///< base URL without a trailing '/', e.g. "http://127.0.0.1:18000"
  std::string authority;  ///< the Host header (and SigV4 `host`): host, or host:port if not default
  std::string region = "us-east-1";
  std::string table = "leader_locks";
  bool create_table = true;       ///< CreateTable (PAY_PER_REQUEST) when missing, wait until ACTIVE
  std::string access_key_id;      ///< from the URI user, or AWS_ACCESS_KEY_ID
  std::string secret_access_key;  ///< from the URI password, or AWS_SECRET_ACCESS_KEY; never shown
  std::string session_token;      ///< AWS_SESSION_TOKEN (temporary credentials), or empty
  std::string ca_file;            ///< https: CA bundle (PEM); empty = the system trust store
  Duration connect_timeout = std::chrono::seconds(1);  ///< TCP (+TLS) connect bound per call
  Duration request_timeout = Duration{0};  ///< upper bound of one HTTP call; 0 = the deadline only
  Duration open_timeout = std::chrono::seconds(10);  ///< bound of the table check at open
  std::string shown;  ///< the URI with its secret redacted, for messages

  /// Parses `dynamodb://[key_id:secret@][host[:port]][?table=..&region=..&tls=..&...]`; throws
  /// InvalidArgument naming the bad value and the rule.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::dynamodb
