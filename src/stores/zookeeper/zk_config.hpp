#pragma once
// Parsing of zk:// URIs into the session and store settings (see README.md, "URI").

#include <string>

#include "clients/zookeeper/session.hpp"

namespace leader::zookeeper {

/// The store's settings: everything a ZooKeeperStore needs from its URI.
struct Config {
  SessionConfig session;
  std::string scheme;            ///< "zk" or "zookeeper"
  std::string root = "/leader";  ///< parent of the lock directories
  /// session_timeout=auto (the default): leases use one session per ttl (rounded up to whole
  /// seconds) whose timeout is that ttl, so a dead holder's node goes after about its ttl.
  bool session_per_ttl = true;

  /// Parses `zk://[user:password@]host[:port][,host[:port]...][/chroot][?options]` (the
  /// connection part with SessionConfig::from_uri); throws InvalidArgument naming the redacted
  /// URI and the rule on bad input.
  static Config from_uri(const Uri& uri);
};

}  // namespace leader::zookeeper
