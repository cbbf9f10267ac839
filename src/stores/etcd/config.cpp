#include "config.hpp"

#include "leader/errors.hpp"

namespace leader::etcd {
namespace {

constexpr int kDefaultPort = 2379;

std::string normalized_prefix(std::string prefix, const std::string& shown) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix.empty() || prefix == "/")
    throw InvalidArgument("URI parameter 'prefix' of '" + shown +
                          "' is empty; give a key prefix such as /leader");
  for (unsigned char c : prefix) {
    if (c < 0x20 || c == 0x7f)
      throw InvalidArgument("URI parameter 'prefix' of '" + shown +
                            "' contains a control character; use printable characters");
  }
  return prefix;
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  Config c;
  c.shown = uri.redacted();
  if (uri.scheme != "etcd" && uri.scheme != "etcds")
    throw InvalidArgument("store URI '" + c.shown + "' is not an etcd:// or etcds:// URI");
  if (uri.hosts.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "' names no host; use etcd://host:port[,host:port...]");
  if (!uri.path.empty() && uri.path != "/")
    throw InvalidArgument("store URI '" + c.shown + "' has path '" + uri.path +
                          "'; etcd URIs take no path (set the key prefix with ?prefix=/leader)");
  uri.expect_params({"prefix", "connect_timeout", "timeout", "tls_ca", "tls_cert", "tls_key"});
  const bool tls = uri.scheme == "etcds";
  for (const auto& h : uri.hosts) {
    std::string host = h.host.find(':') != std::string::npos ? "[" + h.host + "]" : h.host;
    c.endpoints.push_back(std::string(tls ? "https://" : "http://") + host + ":" +
                          std::to_string(h.port.value_or(kDefaultPort)));
  }
  c.user = uri.user;
  c.password = uri.password;
  if (c.password && !c.user)
    throw InvalidArgument("store URI '" + c.shown + "' has a password but no user");
  if (c.user && c.user->empty())
    throw InvalidArgument("store URI '" + c.shown + "' has an empty user name");
  c.prefix = normalized_prefix(uri.param("prefix").value_or(c.prefix), c.shown);
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  if (c.connect_timeout <= Duration{0})
    throw InvalidArgument("URI parameter 'connect_timeout' of '" + c.shown + "' must be > 0");
  c.request_timeout = uri.duration_param("timeout", c.request_timeout);
  c.ca_file = uri.param("tls_ca").value_or("");
  c.cert_file = uri.param("tls_cert").value_or("");
  c.key_file = uri.param("tls_key").value_or("");
  if (!tls && !(c.ca_file.empty() && c.cert_file.empty() && c.key_file.empty()))
    throw InvalidArgument("store URI '" + c.shown +
                          "': tls_ca, tls_cert and tls_key need TLS; use the etcds:// scheme");
  if (c.cert_file.empty() != c.key_file.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "': give both cert and key for a client certificate, or neither");
  return c;
}

}  // namespace leader::etcd
