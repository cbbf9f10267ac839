// The JSON-over-HTTP plumbing of `leader serve` (serve_http.hpp).

#include "serve_http.hpp"

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>

#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/uri.hpp"
#include "serve_leases.hpp"

namespace leader::cli {

using nlohmann::json;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump() + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& reason) {
  send_json(res, status, error_json(code, without_secrets(reason)));
}

json body_object(const httplib::Request& req, const std::set<std::string>& allowed) {
  if (req.body.empty()) return json::object();
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    throw ApiError(400, "bad_body", "the request body must be a JSON object");
  for (auto& [key, value] : body.items()) {
    if (!allowed.count(key)) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      // NOLINTNEXTLINE(performance-inefficient-string-concatenation): once, the throw ends the loop
      throw ApiError(400, "unknown_field", "unknown field '" + key + "' (allowed: " + names + ")");
    }
  }
  return body;
}

Duration duration_field(const json& body, const char* name, Duration fallback) {
  if (!body.contains(name)) return fallback;
  const json& v = body[name];
  try {
    if (v.is_string()) return leader::parse_duration(v.get<std::string>(), name);
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0))
      return leader::parse_duration(std::to_string(v.get<std::int64_t>()) + "s", name);
  } catch (const InvalidArgument& e) {
    throw ApiError(400, "invalid_argument", e.what());
  }
  throw ApiError(400, "invalid_argument",
                 std::string("'") + name + "' must be a duration such as \"30s\" or whole seconds");
}

std::string string_field(const json& body, const char* name) {
  if (!body.contains(name)) return {};
  if (!body[name].is_string())
    throw ApiError(400, "invalid_argument", std::string("'") + name + "' must be a string");
  return body[name].get<std::string>();
}

std::string required_lease_id(const json& body) {
  std::string id = string_field(body, "lease_id");
  if (id.empty()) throw ApiError(400, "missing_lease_id", "'lease_id' is required");
  return id;
}

httplib::Server::HandlerWithContentReader optional_body(
    std::function<void(const httplib::Request&, httplib::Response&)> handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& reader) {
    if (req.has_header("Content-Length") || req.has_header("Transfer-Encoding")) {
      std::string body;
      bool read = reader([&body](const char* data, std::size_t size) {
        body.append(data, size);
        return true;
      });
      if (!read) return;  // too large (413) or cut short (400): httplib set the status
      // httplib owns the request and passes it as const; its body is filled in here, before
      // any handler reads it.
      const_cast<httplib::Request&>(req).body = std::move(body);
    }
    handler(req, res);
  };
}

std::string query_or(const httplib::Request& req, const char* name, const std::string& fallback) {
  return req.has_param(name) ? req.get_param_value(name) : fallback;
}

std::string checked_lock(const std::string& name) {
  try {
    validate_lock_name(name);
  } catch (const InvalidArgument& e) {
    throw ApiError(400, "invalid_lock_name", e.what());
  }
  return name;
}

namespace {

// When the request being answered on this thread reached routing (a request httplib refuses
// while reading it never does): the start of its latency.
thread_local std::optional<std::chrono::steady_clock::time_point> request_started;
// The client of the request being answered on this thread (see request_client()).
thread_local std::string current_client;

// Which credential `authorization` carries: every token is compared in constant time, without an
// early exit. False when none matches; `client` is then left empty.
bool authenticated(const std::string& authorization, const Credentials& c, std::string& client) {
  bool found = !c.token.empty() && same_secret(authorization, "Bearer " + c.token);
  for (const auto& [name, token] : c.clients) {
    if (same_secret(authorization, "Bearer " + token)) {
      client = name;
      found = true;
    }
  }
  return found;
}

// Notes the request's start and its client; then 401 for an API request without a valid bearer
// token (when one is set); the probes and the page stay open.
void start_request(httplib::Server& svr, const Credentials& credentials) {
  svr.set_pre_routing_handler(
      [credentials](const httplib::Request& req,
                    httplib::Response& res) -> httplib::Server::HandlerResponse {
        request_started = std::chrono::steady_clock::now();
        current_client.clear();
        if ((credentials.token.empty() && credentials.clients.empty()) || req.path == "/healthz" ||
            req.path == "/readyz" || req.path == "/")
          return httplib::Server::HandlerResponse::Unhandled;
        if (authenticated(req.get_header_value("Authorization"), credentials, current_client))
          return httplib::Server::HandlerResponse::Unhandled;
        res.set_header("WWW-Authenticate", "Bearer");
        send_error(res, 401, "unauthorized", "a valid 'Authorization: Bearer <token>' is required");
        return httplib::Server::HandlerResponse::Handled;
      });
}

// A request path as logged: a lease id in the path (GET /v1/leases/{id}) is a secret.
std::string logged_path(const std::string& path) {
  constexpr std::string_view kLeases = "/v1/leases/";
  return path.rfind(kLeases, 0) == 0 ? std::string(kLeases) + "{id}" : path;
}

// A JSON body for an HTTP error no route answered (404, 413, ...).
httplib::Server::HandlerResponse http_error_body(const httplib::Request& req,
                                                 httplib::Response& res) {
  if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
  if (res.status == 404)
    send_error(res, 404, "not_found", "no route " + req.method + " " + req.path);
  else if (res.status == 413)
    send_error(res, 413, "body_too_large",
               "request bodies are limited to " + std::to_string(kMaxBodyBytes) + " bytes");
  else
    send_error(res, res.status, "http_error", "HTTP " + std::to_string(res.status));
  return httplib::Server::HandlerResponse::Handled;
}

// The JSON reply of an exception a route threw: its ApiError status, else 500.
void exception_body(const httplib::Request& /*req*/, httplib::Response& res,
                    const std::exception_ptr& error) {
  try {
    rethrow_as_api_error(error);
  } catch (const ApiError& e) {
    if (e.status() == 429) res.set_header("Retry-After", "1");
    send_error(res, e.status(), e.code(), e.what());
  } catch (const std::exception& e) {
    send_error(res, 500, "internal", e.what());
  } catch (...) {
    send_error(res, 500, "internal", "unknown exception");
  }
}

}  // namespace

const std::string& request_client() { return current_client; }

void install_guards(httplib::Server& svr, const Credentials& credentials, const Log& log,
                    RequestObserver observe) {
  start_request(svr, credentials);
  svr.set_error_handler(httplib::Server::HandlerWithResponse(http_error_body));
  svr.set_exception_handler(exception_body);
  svr.set_logger([log, observe = std::move(observe)](const httplib::Request& req,
                                                     const httplib::Response& res) {
    log.info(req.method + " " + logged_path(req.path) + " -> " + std::to_string(res.status) +
             (current_client.empty() ? "" : " (client " + current_client + ")"));
    double seconds = 0;
    if (request_started)
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *request_started)
                    .count();
    request_started.reset();
    if (observe) observe(req, res, seconds);
  });
}

}  // namespace leader::cli
