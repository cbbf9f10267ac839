#include "transport.hpp"

#include "http/client.hpp"

namespace leader::consul {
namespace {

http::ClientOptions options_of(const Config& c) {
  http::ClientOptions o;
  o.store = "consul";
  o.base_urls = {c.base_url};
  o.tls.ca_file = c.tls_ca;
  o.tls.cert_file = c.tls_cert;
  o.tls.key_file = c.tls_key;
  o.tls.verify = c.tls_verify;
  o.tls.server_name = c.tls_server_name;
  o.pool_size = static_cast<std::size_t>(c.pool_size);
  o.connect_timeout = c.connect_timeout;
  if (!c.token.empty()) {
    o.default_headers.push_back({"X-Consul-Token", c.token, true});
    o.secrets.push_back(c.token);
  }
  return o;
}

http::Method method_of(std::string_view m) {
  if (m == "PUT") return http::Method::put;
  if (m == "DELETE") return http::Method::delete_;
  return http::Method::get;
}

}  // namespace

Transport::Transport(const Config& config)
    : client_(std::make_unique<http::Client>(options_of(config))) {}

Transport::~Transport() = default;

Reply Transport::send(std::string_view method, const std::string& target, const std::string& body,
                      Deadline deadline) {
  http::Response r = client_->send({method_of(method), target, {}, body}, deadline);
  Reply out;
  out.status = r.status;
  out.body = std::move(r.body);
  if (auto idx = r.header("X-Consul-Index")) out.consul_index = std::string(*idx);
  return out;
}

std::optional<Reply> Transport::wait(const std::string& target, Deadline deadline,
                                     const std::stop_token& stop) {
  Reply out;
  http::Response r = client_->stream(
      {http::Method::get, target, {}, ""}, deadline,
      [&](std::string_view piece) {
        out.body.append(piece);
        return true;
      },
      stop);
  // Ended by the stop request or the deadline: the body may be cut short.
  if (stop.stop_requested() || deadline.expired()) return std::nullopt;
  out.status = r.status;
  if (auto idx = r.header("X-Consul-Index")) out.consul_index = std::string(*idx);
  return out;
}

}  // namespace leader::consul
