// The connection part of a zk:// URI (SessionConfig::from_uri) and znode path rules.

#include <cstdio>

#include "leader/errors.hpp"
#include "session.hpp"

namespace leader::zookeeper {
namespace {

constexpr int kDefaultPort = 2181;

}  // namespace

void validate_znode_path(const Uri& uri, const std::string& what, const std::string& path) {
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

SessionConfig SessionConfig::from_uri(const Uri& uri) {
  const auto invalid = [&](const std::string& rule) {
    return InvalidArgument("store URI '" + uri.redacted() + "'" + rule);
  };
  SessionConfig c;
  c.shown = uri.redacted();
  if (uri.hosts.empty())
    throw invalid(" names no host (expected zk://host:port[,host:port...][/chroot])");
  for (const auto& h : uri.hosts) {
    if (!c.hosts.empty()) c.hosts += ',';
    bool v6 = h.host.find(':') != std::string::npos;
    c.hosts +=
        (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port.value_or(kDefaultPort));
  }
  if (!uri.path.empty() && uri.path != "/") {
    validate_znode_path(uri, "chroot", uri.path);
    c.hosts += uri.path;
  }
  std::string acl = uri.param("acl").value_or("open");
  if (acl != "open" && acl != "creator")
    throw invalid(": acl '" + acl + "' must be 'open' or 'creator'");
  c.creator_acl = acl == "creator";
  if (uri.user) {
    if (!uri.password) throw invalid(": digest authentication needs user:password");
    c.digest = *uri.user + ":" + *uri.password;
  } else if (c.creator_acl) {
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
