#include "endpoint.hpp"

#include <curl/curl.h>

#include <memory>

#include "leader/errors.hpp"

namespace leader::http::detail {
namespace {

using UrlPtr = std::unique_ptr<CURLU, decltype(&curl_url_cleanup)>;

// The part `what` of `url`, or "" when it is absent.
std::string part(CURLU* url, CURLUPart what, unsigned flags = 0) {
  char* text = nullptr;
  if (curl_url_get(url, what, &text, flags) != CURLUE_OK || text == nullptr) return "";
  std::string out(text);
  curl_free(text);
  return out;
}

std::string position(std::size_t i) { return "base URL #" + std::to_string(i + 1); }

Endpoint parse_one(const std::string& text, std::size_t i, const ClientOptions& options) {
  const std::string name = options.store + " " + position(i);
  UrlPtr url(curl_url(), &curl_url_cleanup);
  if (!url) throw std::bad_alloc();
  if (curl_url_set(url.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK)
    throw InvalidArgument(name + " is not a URL; use http[s]://host[:port][/path]");
  if (!part(url.get(), CURLUPART_USER).empty() || !part(url.get(), CURLUPART_PASSWORD).empty())
    throw InvalidArgument(name + " carries a user or password; pass credentials as headers");
  const std::string scheme = part(url.get(), CURLUPART_SCHEME);
  const std::string host = part(url.get(), CURLUPART_HOST);
  const std::string port = part(url.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (scheme != "http" && scheme != "https")
    throw InvalidArgument(name + " has scheme '" + scheme + "'; use http:// or https://");
  if (host.empty()) throw InvalidArgument(name + " names no host");
  if (!part(url.get(), CURLUPART_QUERY).empty() || !part(url.get(), CURLUPART_FRAGMENT).empty())
    throw InvalidArgument(name + " has a query or fragment; give them in each request's target");
  std::string path = part(url.get(), CURLUPART_PATH);
  while (!path.empty() && path.back() == '/') path.pop_back();
  Endpoint e;
  e.tls = scheme == "https";
  e.shown = scheme + "://" + host + ":" + port + path;
  e.url = e.shown;
  if (e.tls && !options.tls.server_name.empty()) {
    e.url = scheme + "://" + options.tls.server_name + ":" + port + path;
    e.connect_to = options.tls.server_name + ":" + port + ":" + host + ":" + port;
  }
  return e;
}

}  // namespace

std::vector<Endpoint> parse_endpoints(const ClientOptions& options) {
  if (options.base_urls.empty())
    throw InvalidArgument(options.store + ": an HTTP client needs at least one base URL");
  std::vector<Endpoint> out;
  bool any_tls = false;
  for (std::size_t i = 0; i < options.base_urls.size(); ++i) {
    out.push_back(parse_one(options.base_urls[i], i, options));
    any_tls = any_tls || out.back().tls;
  }
  const TlsOptions& tls = options.tls;
  const bool has_cert = !tls.cert_file.empty() || !tls.cert_pem.empty();
  const bool has_key = !tls.key_file.empty() || !tls.key_pem.empty();
  const bool tls_given = !tls.ca_file.empty() || !tls.ca_pem.empty() || has_cert || has_key ||
                         !tls.server_name.empty() || !tls.verify;
  if (tls_given && !any_tls)
    throw InvalidArgument(options.store + ": TLS options need an https:// base URL");
  if (!tls.cert_file.empty() && !tls.cert_pem.empty())
    throw InvalidArgument(options.store + ": give the client certificate as a file or as PEM text");
  if (!tls.key_file.empty() && !tls.key_pem.empty())
    throw InvalidArgument(options.store + ": give the client key as a file or as PEM text");
  if (has_cert != has_key)
    throw InvalidArgument(
        options.store + ": give both a client certificate and its key for mutual TLS, or neither");
  if (tls.server_name.find_first_of(":/@ ") != std::string::npos)
    throw InvalidArgument(options.store + ": TLS server name '" + tls.server_name +
                          "' must be a bare host name");
  if (options.pool_size < 1) throw InvalidArgument(options.store + ": pool_size must be >= 1");
  if (options.connect_timeout <= Duration{0})
    throw InvalidArgument(options.store + ": connect_timeout must be > 0");
  if (options.request_timeout < Duration{0})
    throw InvalidArgument(options.store + ": request timeout must be >= 0");
  return out;
}

}  // namespace leader::http::detail
