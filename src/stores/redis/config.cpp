#include "config.hpp"

#include "leader/errors.hpp"

namespace leader::redis {

Config Config::from_uri(const Uri& uri) {
  uri.expect_params({"prefix", "connect_timeout", "command_timeout", "pool_size", "db", "tls_ca",
                     "tls_cert", "tls_key", "tls_verify", "tls_server_name", "sentinel",
                     "sentinel_check", "wait_replicas", "wait_timeout"});
  Config c;
  static_cast<ClientConfig&>(c) = ClientConfig::from_uri(uri);
  c.prefix = uri.param("prefix").value_or("leader:");
  if (c.prefix.find_first_of("{} \r\n") != std::string::npos)
    throw InvalidArgument("URI parameter 'prefix' of '" + uri.redacted() + "' is '" + c.prefix +
                          "'; it may not contain '{', '}' or white space (keys use hash tags)");
  return c;
}

}  // namespace leader::redis
