#pragma once
/// @file uri.hpp
/// Store URIs: `scheme://[user[:password]@]host[:port][,host[:port]...][/path][?k=v&...]`, or
/// `scheme:path` for file stores. Parsing errors throw InvalidArgument naming the URI with its
/// whole userinfo and every secret-bearing parameter value redacted.
///
/// Redaction rules (the one place that hides secrets in messages and logs):
/// - the password of the userinfo (after its first ':') is shown as `***`; the user is kept;
/// - the value of every query parameter whose name, case-insensitively and after percent-decoding,
///   contains one of kSecretParameterWords (`password`, `sslpassword`, `secret_access_key`,
///   `session_token`, `api_key`, `authorization`, ...) is shown as `***`;
/// - when the userinfo boundary is ambiguous (an '@' after a '/', or `scheme:...@...` without
///   `//`), everything from the start of the authority to the last '@' is shown as `***`;
/// - text that does not parse hides everything before its last '@', user included.

#include <chrono>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leader {

/// One host of a URI.
struct UriHost {
  std::string host{};
  std::optional<int> port{};
};

/// A parsed store URI. Percent-escapes in user, password, path and query are decoded.
struct Uri {
  std::string scheme{};                        ///< lower-cased
  std::optional<std::string> user{};           ///< userinfo before ':'
  std::optional<std::string> password{};       ///< userinfo after ':'; never printed
  std::vector<UriHost> hosts{};                ///< empty for `scheme:path` and `scheme:///path`
  std::string path{};                          ///< e.g. "/0" or "/var/lib/app.db"
  std::map<std::string, std::string> query{};  ///< query parameters
  std::string original{};                      ///< the input

  /// Parses `text`; throws InvalidArgument on malformed input.
  static Uri parse(std::string_view text);
  /// `original` with the password and every secret-bearing parameter value replaced by "***".
  [[nodiscard]] std::string redacted() const;
  /// `message` (e.g. a client library's error) with every secret of this URI (the password and
  /// the secret-bearing parameter values, decoded and as written) replaced by "***".
  [[nodiscard]] std::string scrub(std::string_view message) const;
  /// A query parameter, or nullopt.
  [[nodiscard]] std::optional<std::string> param(const std::string& key) const;
  /// A duration query parameter ("500ms", "2s", "1m"), or `fallback`; throws on bad syntax.
  [[nodiscard]] std::chrono::milliseconds duration_param(const std::string& key,
                                                         std::chrono::milliseconds fallback) const;
  /// A boolean query parameter (true/false/1/0/yes/no), or `fallback`.
  [[nodiscard]] bool bool_param(const std::string& key, bool fallback) const;
  /// Throws InvalidArgument if a query parameter outside `known` is present.
  void expect_params(std::initializer_list<std::string_view> known) const;
};

/// Substrings that make a query parameter secret-bearing (matched case-insensitively).
inline constexpr std::string_view kSecretParameterWords[] = {"pass", "secret", "token",
                                                             "key",  "auth",   "cred"};

/// True when the value of query parameter `name` must never be printed.
[[nodiscard]] bool is_secret_parameter(std::string_view name);

/// The text of a store URI with its secrets replaced by "***", whether or not it parses (as the
/// message of a parse error shows it: everything before the last '@' is hidden).
[[nodiscard]] std::string redact_uri(std::string_view text);

/// Parses "500ms", "30s", "5m", "1h", "250us" (rounded up to ms), or a bare number of seconds.
/// Throws InvalidArgument naming `what` on bad syntax and on values above kMaxDuration (365 days,
/// options.hpp).
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what);

/// "1500ms" -> "1.5s" style human-readable duration.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace leader
