#pragma once
// Lua scripts sent by their SHA1 (EVALSHA). Every Script is remembered by its SHA1 for the life of
// the process, so that the send path (send_calls) can send it again by its source when a server
// answers NOSCRIPT (its script cache was flushed, or it restarted).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"

namespace leader::redis {

/// A Lua script with its SHA1, for EVALSHA with an EVAL fallback on NOSCRIPT.
struct Script {
  std::string source;
  std::string sha1;  ///< lower-case hex SHA1 of `source`
  /// Computes the SHA1 of `src` and remembers the script under it.
  explicit Script(std::string src);
};

/// The source of the Script whose SHA1 is `sha1`, if one was made in this process.
[[nodiscard]] std::optional<std::string> script_source(std::string_view sha1);

/// The script call `EVALSHA <sha1> <number of keys> keys... args...`.
[[nodiscard]] Command script_call(const Script& script, const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args);

}  // namespace leader::redis
