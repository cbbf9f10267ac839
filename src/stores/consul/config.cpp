#include "config.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#include "leader/errors.hpp"

namespace leader::consul {
namespace {

constexpr int kDefaultPort = 8500;

// Keys from [A-Za-z0-9_.-/] only, no empty segment, no "..": valid under every server-side key
// check Consul has shipped (reference consul-lock.md section 2, "Key names").
std::string checked_prefix(std::string prefix, const std::string& shown) {
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (prefix.empty())
    throw InvalidArgument("URI parameter 'prefix' of '" + shown +
                          "' is empty; give a key prefix such as leader");
  for (unsigned char c : prefix)
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '/'))
      throw InvalidArgument("URI parameter 'prefix' of '" + shown +
                            "' may only contain letters, digits and _ . - /");
  if (prefix.find("//") != std::string::npos || prefix.find("..") != std::string::npos)
    throw InvalidArgument("URI parameter 'prefix' of '" + shown + "' has an empty segment or '..'");
  return prefix;
}

std::string read_token_file(const std::string& path, const std::string& shown) {
  std::ifstream in(path);
  if (!in)
    throw InvalidArgument("URI parameter 'token_file' of '" + shown + "': cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return t;
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  Config c;
  c.shown = uri.redacted();
  if (uri.scheme != "consul")
    throw InvalidArgument("store URI '" + c.shown + "' is not a consul:// URI");
  if (uri.hosts.size() != 1)
    throw InvalidArgument("store URI '" + c.shown +
                          "' must name exactly one agent: consul://host[:port]");
  if (!uri.path.empty() && uri.path != "/")
    throw InvalidArgument("store URI '" + c.shown + "' has path '" + uri.path +
                          "'; set the key prefix with ?prefix=leader");
  if (uri.user || uri.password)
    throw InvalidArgument("store URI '" + c.shown +
                          "' has userinfo; give the ACL token with ?token= or ?token_file=");
  uri.expect_params({"token", "token_file", "prefix", "tls", "tls_ca", "tls_cert", "tls_key",
                     "tls_verify", "tls_server_name", "pool_size", "connect_timeout", "lock_delay",
                     "session_ttl_min"});
  c.tls = uri.bool_param("tls", false);
  c.tls_ca = uri.param("tls_ca").value_or("");
  c.tls_cert = uri.param("tls_cert").value_or("");
  c.tls_key = uri.param("tls_key").value_or("");
  c.tls_verify = uri.bool_param("tls_verify", true);
  c.tls_server_name = uri.param("tls_server_name").value_or("");
  if (!c.tls && !(c.tls_ca.empty() && c.tls_cert.empty() && c.tls_key.empty()))
    throw InvalidArgument("store URI '" + c.shown +
                          "': tls_ca, tls_cert and tls_key need tls=true");
  if (c.tls_cert.empty() != c.tls_key.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "': give both tls_cert and tls_key, or neither");
  const auto& h = uri.hosts.front();
  std::string host = h.host.find(':') != std::string::npos ? "[" + h.host + "]" : h.host;
  c.base_url = std::string(c.tls ? "https://" : "http://") + host + ":" +
               std::to_string(h.port.value_or(kDefaultPort));
  c.prefix = checked_prefix(uri.param("prefix").value_or(c.prefix), c.shown);
  if (auto t = uri.param("token")) c.token = *t;
  if (auto f = uri.param("token_file")) {
    if (!c.token.empty())
      throw InvalidArgument("store URI '" + c.shown + "': give token or token_file, not both");
    c.token = read_token_file(*f, c.shown);
  }
  if (auto p = uri.param("pool_size")) {
    try {
      c.pool_size = std::stoi(*p);
    } catch (const std::exception&) {
      c.pool_size = 0;
    }
    if (c.pool_size < 1 || c.pool_size > 1024)
      throw InvalidArgument("URI parameter 'pool_size' of '" + c.shown + "' must be 1..1024");
  }
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  if (c.connect_timeout <= Duration{0})
    throw InvalidArgument("URI parameter 'connect_timeout' of '" + c.shown + "' must be > 0");
  if (uri.param("lock_delay").value_or("auto") != "auto") {
    c.lock_delay = uri.duration_param("lock_delay", Duration{0});
    if (*c.lock_delay > std::chrono::seconds(60))
      throw InvalidArgument("URI parameter 'lock_delay' of '" + c.shown +
                            "' must be auto or <= 60s (Consul caps it there)");
  }
  c.session_ttl_min = uri.duration_param("session_ttl_min", c.session_ttl_min);
  if (c.session_ttl_min <= Duration{0})
    throw InvalidArgument("URI parameter 'session_ttl_min' of '" + c.shown + "' must be > 0");
  return c;
}

}  // namespace leader::consul
