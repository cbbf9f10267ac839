#include "zk_config.hpp"

#include "leader/errors.hpp"

namespace leader::zookeeper {

Config Config::from_uri(const Uri& uri) {
  uri.expect_params({"session_timeout", "prefix", "acl"});
  const auto invalid = [&](const std::string& rule) {
    return InvalidArgument("store URI '" + uri.redacted() + "'" + rule);
  };
  Config c;
  c.scheme = uri.scheme;
  c.session = SessionConfig::from_uri(uri);  // hosts, chroot, credentials, acl
  const std::string timeout = uri.param("session_timeout").value_or("auto");
  c.session_per_ttl = timeout == "auto";
  if (!c.session_per_ttl) c.session.session_timeout = parse_duration(timeout, "session_timeout");
  if (c.session.session_timeout < Duration(100))
    throw invalid(": session_timeout must be at least 100ms");
  c.root = uri.param("prefix").value_or("/leader");
  validate_znode_path(uri, "prefix", c.root);
  if (c.root == "/") throw invalid(": prefix may not be '/'");
  return c;
}

}  // namespace leader::zookeeper
