#pragma once
/// @file uri.hpp
/// Store URIs: `scheme://[user[:password]@]host[:port][,host[:port]...][/path][?k=v&...]`, or
/// `scheme:path` for file stores. Parsing errors throw InvalidArgument naming the URI with its
/// password redacted.

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
  /// `original` with the password replaced by "***".
  [[nodiscard]] std::string redacted() const;
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

/// Parses "500ms", "30s", "5m", "1h", "250us" (rounded up to ms), or a bare number of seconds.
/// Throws InvalidArgument naming `what` on bad syntax.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what);

/// "1500ms" -> "1.5s" style human-readable duration.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace leader
