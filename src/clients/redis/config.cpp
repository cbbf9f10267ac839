#include "config.hpp"

#include <charconv>
#include <string_view>

#include "leader/errors.hpp"

namespace leader::redis {
namespace {

// Refuses `uri` for the reason `why`.
[[noreturn]] void refuse(const Uri& uri, const std::string& why) {
  throw InvalidArgument("store URI '" + uri.redacted() + "': " + why);
}

int int_param(const Uri& uri, const std::string& key, int fallback, int lo, int hi) {
  const auto param = uri.param(key);
  if (!param) return fallback;
  const std::string_view text = *param;
  int value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size() || value < lo || value > hi)
    throw InvalidArgument("URI parameter '" + key + "' of '" + uri.redacted() + "' is '" + *param +
                          "'; expected an integer in " + std::to_string(lo) + ".." +
                          std::to_string(hi));
  return value;
}

int db_from_path(const Uri& uri, const std::string& path) {
  if (path.empty() || path == "/") return 0;
  int value = -1;
  auto digits = std::string_view(path).substr(1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || p != digits.data() + digits.size() || value < 0)
    refuse(uri, "path '" + path + "' must be a database number such as /0");
  return value;
}

void parse_location(const Uri& uri, ClientConfig& c) {
  if (c.transport == Transport::unix_socket) {
    if (!uri.hosts.empty() || uri.path.size() < 2 || uri.path.front() != '/')
      refuse(uri, "expected unix:///absolute/path/redis.sock");
    c.socket_path = uri.path;
    c.db = int_param(uri, "db", 0, 0, 1 << 20);
    return;
  }
  if (uri.scheme == "redis-cluster") {
    if (uri.hosts.empty())
      refuse(uri, "expected one or more cluster nodes (redis-cluster://h1:p1,h2:p2)");
    for (const auto& h : uri.hosts) c.cluster_seeds.push_back({h.host, h.port.value_or(6379)});
    if (db_from_path(uri, uri.path) != 0 || int_param(uri, "db", 0, 0, 0) != 0)
      refuse(uri, "a Redis Cluster has database 0 only");
    if (uri.param("sentinel")) refuse(uri, "?sentinel= with redis-cluster://");
    c.host = c.cluster_seeds.front().host;
    c.port = c.cluster_seeds.front().port;
    return;
  }
  if (uri.scheme == "redis-sentinel" || uri.param("sentinel")) {
    if (c.transport != Transport::tcp)
      refuse(uri, "Sentinel mode supports plain TCP only (no rediss://, no unix://)");
    // The hosts are Sentinels; the path (redis-sentinel://) or ?sentinel= names the master.
    if (uri.hosts.empty())
      refuse(uri, "expected one or more Sentinels (redis-sentinel://h1:p1,h2:p2/name)");
    for (const auto& h : uri.hosts) c.sentinels.push_back({h.host, h.port.value_or(26379)});
    if (uri.scheme == "redis-sentinel") {
      if (uri.param("sentinel"))
        refuse(uri,
               "name the master in the path of redis-sentinel://, not in "
               "?sentinel=");
      c.master_name = uri.path.size() > 1 ? uri.path.substr(1) : "";
    } else {
      c.master_name = *uri.param("sentinel");
      c.db = db_from_path(uri, uri.path);
    }
    if (c.master_name.empty() || c.master_name.find_first_of("/ \r\n") != std::string::npos)
      refuse(uri,
             "the Sentinel master name '" + c.master_name + "' is empty or has '/' or white space");
    if (uri.param("db")) c.db = int_param(uri, "db", 0, 0, 1 << 20);
    c.host = c.sentinels.front().host;  // replaced by the primary's address per connection
    c.port = c.sentinels.front().port;
    return;
  }
  if (uri.hosts.size() != 1) refuse(uri, "expected exactly one host (redis://host[:port][/db])");
  c.host = uri.hosts.front().host;
  c.port = uri.hosts.front().port.value_or(6379);
  c.db = db_from_path(uri, uri.path);
  if (uri.param("db")) c.db = int_param(uri, "db", 0, 0, 1 << 20);
}

void parse_tls(const Uri& uri, ClientConfig& c) {
  c.tls_ca = uri.param("tls_ca").value_or("");
  c.tls_cert = uri.param("tls_cert").value_or("");
  c.tls_key = uri.param("tls_key").value_or("");
  c.tls_verify = uri.bool_param("tls_verify", true);
  c.tls_server_name = uri.param("tls_server_name").value_or("");
  bool any = !c.tls_ca.empty() || !c.tls_cert.empty() || !c.tls_key.empty() ||
             !c.tls_server_name.empty() || uri.param("tls_verify");
  if (any && c.transport != Transport::tls)
    refuse(uri, "tls_* parameters need the rediss:// scheme");
  if (c.tls_cert.empty() != c.tls_key.empty())
    refuse(uri, "tls_cert and tls_key must be given together");
}

}  // namespace

ClientConfig ClientConfig::from_uri(const Uri& uri) {
  ClientConfig c;
  c.redacted_uri = uri.redacted();
  if (uri.scheme == "redis" || uri.scheme == "redis-sentinel" || uri.scheme == "redis-cluster")
    c.transport = Transport::tcp;
  else if (uri.scheme == "rediss")
    c.transport = Transport::tls;
  else if (uri.scheme == "unix")
    c.transport = Transport::unix_socket;
  else
    throw InvalidArgument("store URI '" + uri.redacted() + "' is not a Redis URI");
  parse_location(uri, c);
  parse_tls(uri, c);
  if (uri.user && !uri.user->empty()) c.user = uri.user;
  if (uri.password && !uri.password->empty()) c.password = uri.password;
  if (c.user && !c.password)
    refuse(uri, "a user name needs a password (redis://user:password@host)");
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  c.command_timeout = uri.duration_param("command_timeout", c.command_timeout);
  if (c.connect_timeout <= Duration{0} || c.command_timeout <= Duration{0})
    refuse(uri, "timeouts must be positive");
  c.pool_size = int_param(uri, "pool_size", c.pool_size, 1, 1024);
  c.sentinel_check = uri.duration_param("sentinel_check", c.sentinel_check);
  if (c.sentinel_check < Duration{0})
    throw InvalidArgument("URI parameter 'sentinel_check' of '" + uri.redacted() +
                          "' must not be negative");
  if (c.cluster() && c.transport != Transport::tcp)
    refuse(uri, "Cluster mode supports plain TCP only");
  if (uri.param("sentinel_check") && !c.sentinel())
    refuse(uri, "sentinel_check needs Sentinel mode (redis-sentinel://)");
  c.wait_replicas = int_param(uri, "wait_replicas", 0, 0, 1000);
  c.wait_timeout = uri.duration_param("wait_timeout", c.wait_timeout);
  if (c.wait_timeout < std::chrono::milliseconds(1))
    throw InvalidArgument("URI parameter 'wait_timeout' of '" + uri.redacted() +
                          "' must be at least 1ms (WAIT 0 would block without bound)");
  if (uri.param("wait_timeout") && c.wait_replicas == 0)
    refuse(uri, "wait_timeout needs wait_replicas >= 1");
  return c;
}

std::string ClientConfig::endpoint() const {
  if (transport == Transport::unix_socket) return socket_path;
  auto list = [](const std::vector<Endpoint>& all) {
    std::string out;
    for (const auto& s : all)
      out += (out.empty() ? "" : ",") + s.host + ":" + std::to_string(s.port);
    return out;
  };
  if (cluster()) return "the Redis Cluster of " + list(cluster_seeds);
  if (sentinel()) return "the primary of '" + master_name + "' (Sentinels " + list(sentinels) + ")";
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

}  // namespace leader::redis
