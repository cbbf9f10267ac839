#include "zk_config.hpp"

#include <cstdio>

#include "leader/errors.hpp"

namespace leader::zookeeper {
namespace {

constexpr int kDefaultPort = 2181;

// A znode path: starts with '/', no empty component, no trailing '/', no "." or "..".
void validate_path(const Uri& uri, const std::string& what, const std::string& path) {
  auto bad = [&](const std::string& rule) {
    return InvalidArgument("store URI '" + uri.redacted() + "': " + what + " '" + path + "' " +
                           rule);
  };
  if (path.empty() || path.front() != '/') throw bad("must start with '/'");
  if (path.size() > 1 && path.back() == '/') throw bad("must not end with '/'");
  if (path.find("//") != std::string::npos) throw bad("must not contain an empty component");
  if (path.find("/./") != std::string::npos || path.find("/../") != std::string::npos ||
      path.ends_with("/.") || path.ends_with("/.."))
    throw bad("must not contain '.' or '..' components");
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  uri.expect_params({"session_timeout", "prefix", "acl"});
  const auto invalid = [&](const std::string& rule) {
    return InvalidArgument("store URI '" + uri.redacted() + "'" + rule);
  };
  Config c;
  c.scheme = uri.scheme;
  c.session.shown = uri.redacted();
  if (uri.hosts.empty())
    throw invalid(" names no host (expected zk://host:port[,host:port...][/chroot])");
  for (const auto& h : uri.hosts) {
    if (!c.session.hosts.empty()) c.session.hosts += ',';
    bool v6 = h.host.find(':') != std::string::npos;
    c.session.hosts +=
        (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port.value_or(kDefaultPort));
  }
  if (!uri.path.empty() && uri.path != "/") {
    validate_path(uri, "chroot", uri.path);
    c.session.hosts += uri.path;
  }
  const std::string timeout = uri.param("session_timeout").value_or("auto");
  c.session_per_ttl = timeout == "auto";
  if (!c.session_per_ttl) c.session.session_timeout = parse_duration(timeout, "session_timeout");
  if (c.session.session_timeout < Duration(100))
    throw invalid(": session_timeout must be at least 100ms");
  c.root = uri.param("prefix").value_or("/leader");
  validate_path(uri, "prefix", c.root);
  if (c.root == "/") throw invalid(": prefix may not be '/'");
  std::string acl = uri.param("acl").value_or("open");
  if (acl != "open" && acl != "creator")
    throw invalid(": acl '" + acl + "' must be 'open' or 'creator'");
  c.session.creator_acl = acl == "creator";
  if (uri.user) {
    if (!uri.password) throw invalid(": digest authentication needs user:password");
    c.session.digest = *uri.user + ":" + *uri.password;
  } else if (c.session.creator_acl) {
    throw invalid(": acl=creator needs digest credentials (user:password@)");
  }
  return c;
}

std::string escape_component(std::string_view name) {
  std::string out;
  for (unsigned char ch : name) {
    if (ch == '/' || ch == '%' || ch < 0x20 || ch == 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  if (out == "." || out == "..") out = out == "." ? "%2E" : "%2E%2E";
  return out;
}

}  // namespace leader::zookeeper
