#include "gateway.hpp"

#include "codec.hpp"
#include "leader/errors.hpp"
#include "replies.hpp"

namespace leader::etcd {
namespace {

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "etcd", message);
}

http::ClientOptions http_options(const GatewayConfig& config) {
  http::ClientOptions o;
  o.store = "etcd";
  o.base_urls = config.endpoints;
  o.tls.ca_file = config.ca_file;
  o.tls.cert_file = config.cert_file;
  o.tls.key_file = config.key_file;
  o.connect_timeout = config.connect_timeout;
  o.request_timeout = config.request_timeout;
  o.default_headers = {{"Content-Type", "application/json"}};
  if (config.password) o.secrets.push_back(*config.password);
  return o;
}

}  // namespace

Gateway::Gateway(GatewayConfig config) : config_(std::move(config)), http_(http_options(config_)) {}

Reply Gateway::send(std::string_view path, const std::string& payload, const std::string& token,
                    Deadline deadline) {
  http::Request request{http::Method::post, std::string(path), {}, payload};
  if (!token.empty()) request.headers.push_back({"Authorization", token, /*secret=*/true});
  http::Response r = http_.send(request, deadline);
  return parse_reply(r.body, r.status, "etcd " + r.base_url + std::string(path));
}

std::string Gateway::auth_token(Deadline deadline, const std::string& rejected) {
  {
    std::lock_guard lock(mu_);
    if (!token_.empty() && token_ != rejected) return token_;
  }
  nlohmann::json req = {{"name", *config_.user}, {"password", config_.password.value_or("")}};
  Reply r = send("/v3/auth/authenticate", req.dump(), "", deadline);
  if (!r.ok())
    throw error(ErrorCode::failed_precondition,
                "etcd authentication as user '" + *config_.user + "' failed: " + r.message);
  std::string token = r.body.value("token", "");
  if (token.empty()) throw error(ErrorCode::internal, "etcd authentication returned no token");
  std::lock_guard lock(mu_);
  token_ = token;
  return token;
}

// Calls that read, or that only move a lease's expiry later (a keep-alive restarts it at its full
// TTL from whenever it is applied), may be sent again to another member when an attempt's outcome
// is unknown: applying them twice is the same as applying them once, later. Writes never are.
namespace {
bool repeatable(std::string_view path) {
  return path == "/v3/kv/range" || path == "/v3/lease/keepalive" || path == "/v3/lease/timetolive";
}
}  // namespace

Reply Gateway::send_repeatable(std::string_view path, const std::string& payload,
                               const std::string& token, Deadline deadline) {
  // On a cluster a member that accepts the connection and answers nothing (paused, cut off,
  // dying) would otherwise take the whole deadline, and a renewal with it: each attempt but the
  // last gets half of what is left, and the next one goes to the next member (leader::http
  // starts a call after a possibly-sent failure with the next endpoint).
  const std::size_t members = config_.endpoints.size();
  for (std::size_t attempt = 1;; ++attempt) {
    const bool last = attempt >= members;
    const auto left = deadline.remaining();
    Deadline this_try = last ? deadline : Deadline::after(std::max<Duration>(left / 2, kMinTry));
    this_try = this_try.min(deadline);
    try {
      Reply r = send(path, payload, token, this_try);
      // "no leader", "timed out", "leader changed": this member can not answer now, another may.
      if (last || r.code != kUnavailable || deadline.expired()) return r;
    } catch (const BackendError& e) {
      if (last || e.code() != ErrorCode::deadline_exceeded || deadline.expired()) throw;
    }
  }
}

Reply Gateway::post(std::string_view path, const nlohmann::json& request, Deadline deadline) {
  return post_text(path, request.dump(), deadline);
}

Reply Gateway::post_text(std::string_view path, const std::string& payload, Deadline deadline) {
  if (deadline.expired())
    throw error(ErrorCode::deadline_exceeded,
                "deadline passed before the etcd call " + std::string(path) + " was sent");
  std::string token = config_.user ? auth_token(deadline, "") : "";
  for (int attempt = 0;; ++attempt) {
    Reply r = repeatable(path) && config_.endpoints.size() > 1
                  ? send_repeatable(path, payload, token, deadline)
                  : send(path, payload, token, deadline);
    // An expired or revoked auth token is rejected before anything is applied: re-authenticate.
    bool stale_token =
        r.code == kUnauthenticated || r.message.find("invalid auth token") != std::string::npos;
    if (config_.user && stale_token && attempt == 0) {
      token = auth_token(deadline, token);
      continue;
    }
    return r;
  }
}

void Gateway::stream(std::string_view path, const nlohmann::json& request, Deadline deadline,
                     const std::function<bool(const Reply&)>& on_message,
                     const std::stop_token& stop) {
  if (deadline.expired() || stop.stop_requested()) return;
  http::Request req{http::Method::post, std::string(path), {}, request.dump()};
  if (config_.user) req.headers.push_back({"Authorization", auth_token(deadline, ""), true});
  const std::string where = "etcd " + std::string(path);
  const http::Response r = http_.stream_lines(
      req, deadline,
      [&](std::string_view line) {
        if (line.find_first_not_of(" \r\t") == std::string_view::npos) return true;
        const Reply m = parse_reply(std::string(line), 200, where);
        if (!m.ok()) fail(m, path);
        return on_message(m);
      },
      stop);
  if (r.status != 0 && r.status != 200)
    throw error(ErrorCode::internal, where + " answered HTTP " + std::to_string(r.status));
}

bool Gateway::watch(const std::string& key, const std::string& range_end, std::int64_t from,
                    Deadline deadline, const std::stop_token& stop,
                    const std::function<bool(const nlohmann::json& events)>& awaited) {
  nlohmann::json create = {{"key", base64_encode(key)}, {"start_revision", std::to_string(from)}};
  if (!range_end.empty()) create["range_end"] = base64_encode(range_end);
  bool woken = false;
  stream(
      "/v3/watch", {{"create_request", std::move(create)}}, deadline,
      [&](const Reply& m) {
        const auto events = m.body.find("events");
        woken = (events != m.body.end() && events->is_array() && awaited(*events)) ||
                m.body.value("canceled", false);
        return !woken;
      },
      stop);
  return woken;
}

nlohmann::json Gateway::call(std::string_view path, const nlohmann::json& request,
                             Deadline deadline) {
  Reply r = post(path, request, deadline);
  if (!r.ok()) fail(r, path);
  return std::move(r.body);
}

void Gateway::fail(const Reply& reply, std::string_view what) const {
  ErrorCode code = ErrorCode::internal;
  const std::string& m = reply.message;
  switch (reply.code) {
    case kInvalidArgument:
      // "user name is empty": auth is enabled and the URI names no user.
      code = m.find("user name") != std::string::npos ? ErrorCode::failed_precondition
                                                      : ErrorCode::invalid_argument;
      break;
    case kDeadlineExceeded:
      code = ErrorCode::deadline_exceeded;
      break;
    case kPermissionDenied:
    case kUnauthenticated:
    case kFailedPrecondition:
      code = ErrorCode::failed_precondition;
      break;
    case kResourceExhausted:
      code = ErrorCode::unavailable;
      break;
    case kUnavailable:
      // A proposal that timed out or met a leader change may still commit: outcome unknown.
      code =
          m.find("timed out") != std::string::npos || m.find("leader changed") != std::string::npos
              ? ErrorCode::deadline_exceeded
              : ErrorCode::unavailable;
      break;
    default:
      break;
  }
  throw error(code, "etcd " + std::string(what) + " failed: " + m + " (gRPC code " +
                        std::to_string(reply.code) + ", " + config_.shown + ")");
}

}  // namespace leader::etcd
