#include "config.hpp"

#include <cctype>
#include <cstdlib>

#include "leader/errors.hpp"

namespace leader::dynamodb {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool all_of_chars(const std::string& s, std::string_view extra) {
  for (unsigned char c : s)
    if (!std::isalnum(c) && extra.find(static_cast<char>(c)) == std::string_view::npos)
      return false;
  return true;
}

void check_table(const Config& c) {
  if (c.table.size() < 3 || c.table.size() > 255 || !all_of_chars(c.table, "_.-"))
    throw InvalidArgument("URI parameter 'table' of '" + c.shown + "' is '" + c.table +
                          "'; DynamoDB table names have 3..255 characters of [A-Za-z0-9_.-]");
}

void check_region(const Config& c) {
  if (c.region.empty() || !all_of_chars(c.region, "-"))
    throw InvalidArgument("URI parameter 'region' of '" + c.shown + "' is '" + c.region +
                          "'; a region looks like us-east-1");
}

// Splits "http(s)://host[:port]" given as ?endpoint=; sets endpoint and authority.
void use_endpoint_param(Config& c, const std::string& url) {
  const bool tls = url.rfind("https://", 0) == 0;
  if (!tls && url.rfind("http://", 0) != 0)
    throw InvalidArgument("URI parameter 'endpoint' of '" + c.shown +
                          "' must start with http:// or https://");
  std::string rest = url.substr(tls ? 8 : 7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string::npos)
    throw InvalidArgument("URI parameter 'endpoint' of '" + c.shown +
                          "' must be scheme://host[:port] with no path, query or user");
  c.endpoint = std::string(tls ? "https://" : "http://") + rest;
  c.authority = rest;
  const std::string default_port = tls ? ":443" : ":80";
  if (c.authority.size() > default_port.size() &&
      c.authority.compare(c.authority.size() - default_port.size(), default_port.size(),
                          default_port) == 0)
    c.authority.resize(c.authority.size() - default_port.size());
}

void use_host(Config& c, const UriHost& h, bool tls) {
  std::string host = h.host.find(':') != std::string::npos ? "[" + h.host + "]" : h.host;
  const int port = h.port.value_or(tls ? 443 : 80);
  c.authority = port == (tls ? 443 : 80) ? host : host + ":" + std::to_string(port);
  c.endpoint = std::string(tls ? "https://" : "http://") + c.authority;
}

void read_credentials(Config& c, const Uri& uri) {
  if (uri.user || uri.password) {
    if (!uri.user || uri.user->empty() || !uri.password || uri.password->empty())
      throw InvalidArgument("store URI '" + c.shown +
                            "' must give both the access key id and the secret as "
                            "key_id:secret@ (percent-encode '/' and '+' in the secret)");
    c.access_key_id = *uri.user;
    c.secret_access_key = *uri.password;
    return;
  }
  c.access_key_id = env("AWS_ACCESS_KEY_ID");
  c.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
  c.session_token = env("AWS_SESSION_TOKEN");
  if (c.access_key_id.empty() || c.secret_access_key.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "' has no credentials: give key_id:secret@ in the URI or set "
                          "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
}

// The redacted URI, also hiding a user or password given inside ?endpoint= (refused below, but
// named in messages until then).
std::string without_endpoint_userinfo(const Uri& uri) {
  std::string shown = uri.redacted();
  auto endpoint = uri.param("endpoint");
  if (!endpoint || endpoint->find('@') == std::string::npos) return shown;
  auto at = shown.find("endpoint=");
  if (at == std::string::npos) return uri.scheme + "://(redacted)";
  auto end = shown.find('&', at);
  return shown.replace(at, end == std::string::npos ? std::string::npos : end - at, "endpoint=***");
}

}  // namespace

Config Config::from_uri(const Uri& uri) {
  Config c;
  c.shown = without_endpoint_userinfo(uri);
  if (uri.scheme != "dynamodb")
    throw InvalidArgument("store URI '" + c.shown + "' is not a dynamodb:// URI");
  if (!uri.path.empty() && uri.path != "/")
    throw InvalidArgument("store URI '" + c.shown + "' has path '" + uri.path +
                          "'; dynamodb URIs take no path (name the table with ?table=)");
  uri.expect_params({"table", "region", "tls", "endpoint", "create_table", "connect_timeout",
                     "timeout", "open_timeout", "tls_ca"});
  if (uri.hosts.size() > 1)
    throw InvalidArgument("store URI '" + c.shown + "' names " + std::to_string(uri.hosts.size()) +
                          " hosts; DynamoDB takes one endpoint");
  c.region = uri.param("region").value_or(c.region);
  check_region(c);
  c.table = uri.param("table").value_or(c.table);
  check_table(c);
  auto endpoint = uri.param("endpoint");
  if (endpoint && !uri.hosts.empty())
    throw InvalidArgument("store URI '" + c.shown +
                          "' gives both a host and ?endpoint=; use one of them");
  if (endpoint && uri.param("tls"))
    throw InvalidArgument("store URI '" + c.shown +
                          "' gives ?tls= with ?endpoint=; the endpoint's scheme decides TLS");
  if (endpoint) {
    use_endpoint_param(c, *endpoint);
  } else if (!uri.hosts.empty()) {
    use_host(c, uri.hosts.front(), uri.bool_param("tls", true));
  } else {
    if (!uri.bool_param("tls", true))
      throw InvalidArgument("store URI '" + c.shown +
                            "': the AWS endpoint of a region needs TLS; drop tls=false or name "
                            "a host");
    c.authority = "dynamodb." + c.region + ".amazonaws.com";
    c.endpoint = "https://" + c.authority;
  }
  c.create_table = uri.bool_param("create_table", true);
  c.connect_timeout = uri.duration_param("connect_timeout", c.connect_timeout);
  c.request_timeout = uri.duration_param("timeout", c.request_timeout);
  c.open_timeout = uri.duration_param("open_timeout", c.open_timeout);
  if (c.connect_timeout <= Duration{0} || c.open_timeout <= Duration{0})
    throw InvalidArgument("store URI '" + c.shown +
                          "': connect_timeout and open_timeout must be > 0");
  c.ca_file = uri.param("tls_ca").value_or("");
  if (!c.ca_file.empty() && c.endpoint.rfind("https://", 0) != 0)
    throw InvalidArgument("store URI '" + c.shown + "': tls_ca needs TLS (tls=true)");
  read_credentials(c, uri);
  return c;
}

}  // namespace leader::dynamodb
