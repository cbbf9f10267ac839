#pragma once
/// @file serve_http.hpp
/// The JSON-over-HTTP plumbing of `leader serve`: replies, the checked fields of a request, and
/// the guards every route runs behind (bearer token, error bodies, ApiError -> status, logging).
/// Every check throws ApiError (serve_leases.hpp), which the guards turn into its JSON reply.

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "leader/time.hpp"
#include "log.hpp"

namespace leader::cli {

/// The largest request body accepted (413 above it).
inline constexpr std::size_t kMaxBodyBytes = std::size_t{16} * 1024;

/// Replies `body` with `status`.
void send_json(httplib::Response& res, int status, const nlohmann::json& body);

/// Replies {"error": code, "reason": reason} (secrets masked) with `status`.
void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& reason);

/// The request body as a JSON object ({} when empty) whose keys are all in `allowed`; 400
/// otherwise.
nlohmann::json body_object(const httplib::Request& req, const std::set<std::string>& allowed);

/// A duration field: "1m30s"-style string or a number of seconds; `fallback` when absent.
Duration duration_field(const nlohmann::json& body, const char* name, Duration fallback);

/// A string field; "" when absent.
std::string string_field(const nlohmann::json& body, const char* name);

/// The required "lease_id" field.
std::string required_lease_id(const nlohmann::json& body);

/// Query parameter `name`, or `fallback` when absent.
std::string query_or(const httplib::Request& req, const char* name, const std::string& fallback);

/// `name` when it is a valid lock name; 400 invalid_lock_name otherwise.
std::string checked_lock(const std::string& name);

/// A POST route whose body may be absent: httplib answers 400 to a POST without Content-Length
/// (and not chunked) before a plain handler runs; this one runs first, reads the body only when
/// one is announced (into req.body, within kMaxBodyBytes), then calls `handler`.
httplib::Server::HandlerWithContentReader optional_body(
    std::function<void(const httplib::Request&, httplib::Response&)> handler);

/// Called once per answered request with the seconds it took (e.g. to count it in metrics).
using RequestObserver =
    std::function<void(const httplib::Request&, const httplib::Response&, double seconds)>;

/// The bearer tokens a sidecar accepts: `token` (--token-file, anonymous) and one per named
/// client (--clients-file). Both empty: no check.
struct Credentials {
  std::string token;
  std::vector<std::pair<std::string, std::string>> clients;  ///< (name, token)
};

/// Installs what runs around every route: the bearer token check (all but /, /healthz and
/// /readyz, when a token is set), JSON bodies for HTTP errors and exceptions, one log line (-v)
/// per request (with its client's name), and `observe` (when set) for every answered request.
void install_guards(httplib::Server& svr, const Credentials& credentials, const Log& log,
                    RequestObserver observe);

/// The client (--clients-file name) whose token the request being handled on this thread sent;
/// "" without --clients-file or for the --token-file token.
const std::string& request_client();

}  // namespace leader::cli
