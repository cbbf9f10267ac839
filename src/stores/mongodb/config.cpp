#include "config.hpp"

#include <cstdlib>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"

namespace leader::mongodb {
namespace {

constexpr int kDefaultPort = 27017;
constexpr int kMaxPoolSize = 64;

[[noreturn]] void refuse(const Config& c, const std::string& what) {
  throw InvalidArgument("store URI '" + c.shown + "': " + what);
}

// MongoDB database names: 1..63 bytes, none of /\. "$ (manual "Naming Restrictions").
void check_database(const Config& c) {
  if (c.database.empty() || c.database.size() > 63)
    refuse(c, "database name must be 1..63 characters");
  for (char ch : c.database)
    if (ch == '/' || ch == '\\' || ch == '.' || ch == ' ' || ch == '"' || ch == '$' || ch == '\0')
      refuse(c, "database name '" + c.database + "' contains one of /\\. \"$");
}

int int_param(const Uri& uri, const Config& c, const std::string& key, int fallback, int lo,
              int hi) {
  auto text = uri.param(key);
  if (!text) return fallback;
  char* end = nullptr;
  const long v = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || v < lo || v > hi)
    refuse(c, key + "=" + *text + " must be an integer in " + std::to_string(lo) + ".." +
                  std::to_string(hi));
  return static_cast<int>(v);
}

void parse_write_concern(const Uri& uri, Config& c) {
  c.write_concern = uri.param("w").value_or(c.write_concern);
  if (c.write_concern.empty()) refuse(c, "w= is empty; use w=majority or a number >= 1");
  if (c.write_concern.find_first_not_of("0123456789") == std::string::npos) {
    const int w = int_param(uri, c, "w", 1, 0, 50);
    if (w == 0)
      refuse(c,
             "w=0 (unacknowledged writes) cannot tell a granted lease from a lost one; use "
             "w=1 or w=majority");
  }
  c.wtimeout = uri.duration_param("wtimeout", c.wtimeout);
  c.journal = uri.bool_param("journal", c.journal);
}

void parse_tls(const Uri& uri, Config& c) {
  c.tls = uri.bool_param("tls", false);
  c.tls_ca = uri.param("tls_ca").value_or("");
  c.tls_cert = uri.param("tls_cert").value_or("");
  const std::string key = uri.param("tls_key").value_or("");
  c.tls_verify = uri.bool_param("tls_verify", true);
  if (uri.param("tls_server_name"))
    refuse(c,
           "tls_server_name is not supported: libmongoc 1.23 verifies the host name of the "
           "URI; name the server by that host");
  if (!key.empty() && key != c.tls_cert)
    refuse(c,
           "tls_key must be the tls_cert file: libmongoc reads the client certificate and "
           "its key from one PEM file");
  if (!c.tls && (!c.tls_ca.empty() || !c.tls_cert.empty() || uri.param("tls_verify")))
    refuse(c, "tls_ca, tls_cert, tls_key and tls_verify need tls=true");
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  Config c;
  c.shown = uri.redacted();
  if (uri.scheme != "mongodb")
    throw InvalidArgument("store URI '" + c.shown + "' is not a mongodb:// URI");
  if (uri.hosts.empty())
    refuse(c, "names no host; use mongodb://host:port[,host:port...]/database");
  uri.expect_params({"prefix", "w", "wtimeout", "journal", "pool_size", "connect_timeout",
                     "socket_timeout", "gc_after", "create_indexes", "auth_source", "replica_set",
                     "tls", "tls_ca", "tls_cert", "tls_key", "tls_verify", "tls_server_name"});
  for (const auto& h : uri.hosts) {
    const std::string host = h.host.find(':') != std::string::npos ? "[" + h.host + "]" : h.host;
    c.hosts.push_back(host + ":" + std::to_string(h.port.value_or(kDefaultPort)));
  }
  if (!uri.path.empty() && uri.path != "/") c.database = uri.path.substr(1);
  check_database(c);
  c.prefix = uri.param("prefix").value_or(c.prefix);
  detail::validate_table_prefix(c.prefix, c.shown);
  c.user = uri.user;
  c.password = uri.password;
  if (c.user && c.user->empty()) refuse(c, "has an empty user name");
  if (c.password && !c.user) refuse(c, "has a password but no user");
  c.auth_source = uri.param("auth_source");
  c.replica_set = uri.param("replica_set");
  parse_write_concern(uri, c);
  c.pool_size = int_param(uri, c, "pool_size", c.pool_size, 1, kMaxPoolSize);
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  c.socket_timeout = uri.duration_param("socket_timeout", c.socket_timeout);
  c.gc_after = uri.duration_param("gc_after", c.gc_after);
  if (c.connect_timeout <= Duration{0} || c.socket_timeout <= Duration{0})
    refuse(c, "connect_timeout and socket_timeout must be > 0");
  if (c.gc_after < std::chrono::seconds(1)) refuse(c, "gc_after must be at least 1s");
  c.create_indexes = uri.bool_param("create_indexes", c.create_indexes);
  parse_tls(uri, c);
  return c;
}

}  // namespace leader::mongodb
