#include "api.hpp"

#include <algorithm>

#include "http/json.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr auto kTokenReload = std::chrono::minutes(1);  // as client-go's cached file token source

std::string read_token(const std::string& path) {
  const std::optional<std::string> token = file_text(path);
  if (!token)
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "cannot read the bearer token file '" + path + "'");
  if (token->empty())
    throw BackendError(ErrorCode::failed_precondition, "k8s",
                       "the bearer token file '" + path + "' is empty");
  return *token;
}

http::ClientOptions client_options(const ClusterConfig& c) {
  http::ClientOptions o;
  o.store = "k8s";
  o.base_urls = {c.base_url};
  o.tls.ca_file = c.ca_file;
  o.tls.cert_file = c.cert_file;
  o.tls.key_file = c.key_file;
  o.tls.ca_pem = c.ca_pem;
  o.tls.cert_pem = c.cert_pem;
  o.tls.key_pem = c.key_pem;
  o.tls.verify = c.tls_verify;
  o.tls.server_name = c.tls_server_name;
  o.pool_size = static_cast<std::size_t>(c.pool_size);
  o.connect_timeout = c.connect_timeout;
  o.request_timeout = c.request_timeout;
  o.default_headers = {{"Accept", "application/json", false},
                       {"Content-Type", "application/json", false}};
  if (!c.token.empty()) o.default_headers.push_back({"Authorization", "Bearer " + c.token, true});
  return o;
}

constexpr long kMaxWatchSeconds = 1800;                      // the apiserver's usual ceiling
constexpr std::size_t kMaxWatchLine = std::size_t{1} << 20;  // one event of one Lease is ~1 KiB

/// `selector` with '/' and '=' percent-encoded, for a query parameter's value.
std::string encode_selector(const std::string& selector) {
  std::string encoded;
  for (char c : selector) encoded += c == '/' ? "%2F" : c == '=' ? "%3D" : std::string(1, c);
  return encoded;
}

std::string status_message(const nlohmann::json& body) {
  return http::field<std::string>(body, "message").value_or("(no Status message)");
}

[[noreturn]] void fail(http::Method method, const Reply& r, const std::string& what,
                       const http::Client& client) {
  const std::string text =
      client.redact(std::string(http::to_string(method)) + " " + what + ": HTTP " +
                    std::to_string(r.status) + " " + r.reason + ": " + status_message(r.body));
  switch (r.status) {
    case 401:
      throw BackendError(
          ErrorCode::failed_precondition, "k8s",
          text +
              " (the bearer token was refused; check token / token_file or the kubeconfig user)");
    case 403:
      throw BackendError(ErrorCode::failed_precondition, "k8s",
                         text + " (grant the Role of deploy/k8s/rbac.yaml)");
    case 429:
    case 503:
      throw BackendError(ErrorCode::unavailable, "k8s", text);
    case 500:
    case 504:
      throw BackendError(
          method == http::Method::get ? ErrorCode::unavailable : ErrorCode::deadline_exceeded,
          "k8s", text + " (the write's outcome is unknown)");
    default:
      throw BackendError(ErrorCode::internal, "k8s", text);
  }
}

}  // namespace

Api::Api(ClusterConfig config)
    : config_(std::move(config)),
      scope_(config_.base_url + "/" + config_.ns),
      path_("/apis/coordination.k8s.io/v1/namespaces/" + config_.ns + "/leases"),
      client_(std::make_unique<http::Client>(client_options(config_))) {}

void Api::refresh_token(bool force) {
  if (config_.token_file.empty()) return;
  std::lock_guard lock(token_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!force && token_loaded_ && now - token_read_ < kTokenReload) return;
  client_->set_default_header({"Authorization", "Bearer " + read_token(config_.token_file), true});
  token_read_ = now;
  token_loaded_ = true;
}

Reply Api::call(http::Method method, const std::string& target, const std::string& body,
                Deadline deadline) {
  refresh_token();
  http::Response resp = client_->send({method, target, {}, body}, deadline);
  if (resp.status == 401 && !config_.token_file.empty()) {
    refresh_token(/*force=*/true);  // the token may have rotated; a 401 applied nothing: resend
    resp = client_->send({method, target, {}, body}, deadline);
  }
  Reply r;
  r.received = std::chrono::steady_clock::now();
  r.status = resp.status;
  if (!resp.body.empty()) {
    r.body = nlohmann::json::parse(resp.body, nullptr, false);
    if (r.body.is_discarded())
      throw BackendError(ErrorCode::internal, "k8s",
                         std::string(http::to_string(method)) + " " + target + ": HTTP " +
                             std::to_string(resp.status) + " with a body that is not JSON");
  }
  if (!r.ok()) r.reason = http::field<std::string>(r.body, "reason").value_or("");
  if (r.ok() || r.not_found() || r.conflict()) return r;
  fail(method, r, target, *client_);
}

Reply Api::get(const std::string& name, Deadline deadline) {
  return call(http::Method::get, path_ + "/" + name, {}, deadline);
}

Reply Api::list(const std::string& selector, Deadline deadline) {
  return call(http::Method::get, path_ + "?labelSelector=" + encode_selector(selector), {},
              deadline);
}

std::string Api::label_selector(const std::string& k_eq_v) {
  return "labelSelector=" + encode_selector(k_eq_v);
}

std::string Api::name_selector(const std::string& name) {
  return "fieldSelector=" + encode_selector("metadata.name=" + name);
}

WatchEnd Api::watch(const std::string& selector, const std::string& resource_version,
                    Deadline deadline, const std::stop_token& stop) {
  const auto left = std::chrono::duration_cast<std::chrono::seconds>(deadline.remaining());
  const long timeout = std::clamp<long>(static_cast<long>(left.count()) + 1, 1, kMaxWatchSeconds);
  const std::string target = path_ + "?watch=true&" + selector +
                             "&resourceVersion=" + resource_version +
                             "&timeoutSeconds=" + std::to_string(timeout);
  for (int attempt = 0;; ++attempt) {
    refresh_token(/*force=*/attempt > 0);  // after a 401: the token may have rotated
    WatchEnd end = WatchEnd::ended;
    nlohmann::json rejected;  // a line that is no event: the Status of an error reply
    http::Response resp;
    try {
      resp = client_->stream_lines(
          {http::Method::get, target, {}, {}}, deadline,
          [&](std::string_view text) {
            const auto line = nlohmann::json::parse(text, nullptr, false);
            const auto type = http::field<std::string>(line, "type");
            if (!type) rejected = line;
            if (!type || type == "BOOKMARK") return true;
            end = type == "ERROR" ? WatchEnd::expired : WatchEnd::changed;
            return false;
          },
          stop, kMaxWatchLine);  // a line this long is no Lease event
    } catch (const BackendError& e) {
      // The watch's own deadline passed before the reply's headers came (a slow server): no
      // change is known, as when a watch times out; the caller reads again.
      if (e.code() == ErrorCode::deadline_exceeded && deadline.expired()) return WatchEnd::ended;
      throw;
    }
    // A stop request (or the deadline) before the headers came leaves no status: no change is
    // known either (it was read as an HTTP 0 error and ended the observer: seen in a CI run).
    if (resp.status == 0 && (stop.stop_requested() || deadline.expired())) return WatchEnd::ended;
    if (resp.success()) {
      if (end == WatchEnd::ended && resp.body.size() >= kMaxWatchLine)
        throw BackendError(
            ErrorCode::internal, "k8s",
            "watch of leases: an event line over " + std::to_string(kMaxWatchLine) + " bytes");
      return end;
    }
    Reply r;
    r.status = resp.status;
    r.body = resp.body.empty() ? rejected : nlohmann::json::parse(resp.body, nullptr, false);
    if (r.body.is_discarded()) r.body = nullptr;
    r.reason = http::field<std::string>(r.body, "reason").value_or("");
    if (r.status == 410) return WatchEnd::expired;  // resourceVersion too old: list again
    if (r.status == 401 && !config_.token_file.empty() && attempt == 0) continue;
    if (r.status == 403)  // get and list may be granted without watch
      throw BackendError(
          ErrorCode::failed_precondition, "k8s",
          client_->redact("GET " + path_ + "?watch=true: HTTP 403 " + r.reason + ": " +
                          status_message(r.body) + " (the Role needs the verb watch on leases)"));
    fail(http::Method::get, r, path_ + "?watch=true", *client_);
  }
}

Reply Api::create(const nlohmann::json& object, Deadline deadline) {
  nlohmann::json body = object;
  body["metadata"].erase("resourceVersion");
  return call(http::Method::post, path_, body.dump(), deadline);
}

Reply Api::replace(const std::string& name, const nlohmann::json& object, Deadline deadline) {
  return call(http::Method::put, path_ + "/" + name, object.dump(), deadline);
}

Reply Api::remove(const std::string& name, Deadline deadline) {
  return call(http::Method::delete_, path_ + "/" + name, {}, deadline);
}

}  // namespace leader::k8s
