#pragma once
// The Redis store's settings, parsed from its URI (see README.md for the options): the client's
// connection settings and the store's key prefix.

#include <string>

#include "leader/uri.hpp"
#include "redis/config.hpp"

namespace leader::redis {

/// The store's settings: the client's, and the prefix of every key the store writes.
struct Config : ClientConfig {
  std::string prefix = "leader:";  ///< prepended to every key

  /// Parses a store URI (every parameter of README.md, section URI); throws InvalidArgument.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::redis

/// The store's former namespace.
namespace leader::detail {
namespace redis = ::leader::redis;
}  // namespace leader::detail
