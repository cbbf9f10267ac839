#include "gateway.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "leader/errors.hpp"
#include "replies.hpp"

namespace leader::etcd {
namespace {

constexpr std::size_t kMaxIdleHandles = 8;

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "etcd", message);
}

bool is_tls_setup_error(CURLcode rc) {
  return rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
         rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CIPHER ||
         rc == CURLE_SSL_ISSUER_ERROR;
}

}  // namespace

// Reads etcd's status out of a reply: unary errors are {"error","code","message"}, streamed
// ones {"error":{"grpc_code","message"}}, streamed results {"result":{...}}.
Reply parse_reply(const std::string& text, long http_status, const std::string& where) {
  Reply r;
  auto line = std::string_view(text).substr(0, text.find('\n'));
  r.body = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded() || !r.body.is_object())
    throw error(ErrorCode::internal,
                where + " answered HTTP " + std::to_string(http_status) + " without a JSON object");
  if (auto res = r.body.find("result"); res != r.body.end() && res->is_object()) {
    nlohmann::json inner = std::move(*res);
    r.body = std::move(inner);
    return r;
  }
  auto err = r.body.find("error");
  if (err == r.body.end()) {
    if (http_status != 200)
      throw error(ErrorCode::internal,
                  where + " answered HTTP " + std::to_string(http_status) + ": " + text);
    return r;
  }
  const nlohmann::json& coded = err->is_object() ? *err : r.body;
  const char* code_field = err->is_object() ? "grpc_code" : "code";
  if (auto c = coded.find(code_field); c != coded.end() && !c->is_number_integer())
    throw error(ErrorCode::internal,
                where + " answered a malformed error: " + std::string(line.substr(0, 200)));
  try {
    if (err->is_object()) {
      r.code = err->value("grpc_code", 2);
      r.message = err->value("message", "unknown error");
    } else {
      r.code = r.body.value("code", 2);
      r.message = r.body.value("message", err->is_string() ? err->get<std::string>() : "");
    }
  } catch (const nlohmann::json::exception&) {  // a code that is no number, a message no string
    throw error(ErrorCode::internal,
                where + " answered a malformed error: " + std::string(line.substr(0, 200)));
  }
  if (r.code == kOk) r.code = 2;  // an error object always means failure
  return r;
}

struct Gateway::Transfer {
  CURLcode rc = CURLE_OK;
  long http_status = 0;
  bool sent = false;  // the request may have reached the server
  std::string body;
  std::string endpoint;
  std::string curl_error;
};

Gateway::Gateway(Config config) : config_(std::move(config)) { global_init(); }

Gateway::~Gateway() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Gateway::take_handle() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  CURL* h = curl_easy_init();
  if (h == nullptr) throw error(ErrorCode::internal, "curl_easy_init failed");
  return h;
}

void Gateway::give_handle(void* curl) {
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdleHandles) {
    idle_.push_back(curl);
    return;
  }
  curl_easy_cleanup(static_cast<CURL*>(curl));
}

Gateway::Transfer Gateway::perform(void* handle, const std::string& url, const std::string& payload,
                                   const std::string& token, Deadline deadline) const {
  CURL* h = static_cast<CURL*>(handle);
  Transfer t;
  char errbuf[CURL_ERROR_SIZE] = {0};
  long total = std::max<long>(1, static_cast<long>(deadline.remaining().count()));
  if (config_.request_timeout.count() > 0)
    total = std::min(total, static_cast<long>(config_.request_timeout.count()));
  long connect = std::min(total, static_cast<long>(config_.connect_timeout.count()));
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  std::string auth = "Authorization: " + token;
  if (!token.empty()) headers = curl_slist_append(headers, auth.c_str());
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t.body);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!config_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, config_.ca_file.c_str());
  if (!config_.cert_file.empty()) {
    curl_easy_setopt(h, CURLOPT_SSLCERT, config_.cert_file.c_str());
    curl_easy_setopt(h, CURLOPT_SSLKEY, config_.key_file.c_str());
  }
  t.rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.http_status);
  // Header bytes written = the request may have reached etcd (also on a reused connection,
  // whose connect time reads 0); only an unsent request may go to another endpoint.
  long request_bytes = 0;
  curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_bytes);
  t.sent = request_bytes > 0 && t.rc != CURLE_COULDNT_CONNECT && t.rc != CURLE_COULDNT_RESOLVE_HOST;
  t.curl_error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(t.rc);
  return t;
}

Gateway::Transfer Gateway::send(std::string_view path, const std::string& payload,
                                const std::string& token, Deadline deadline) {
  const std::size_t n = config_.endpoints.size();
  const std::size_t start = preferred_.load(std::memory_order_relaxed) % n;
  std::string failures;
  for (std::size_t i = 0; i < n; ++i) {
    if (deadline.expired())
      throw error(ErrorCode::deadline_exceeded,
                  "deadline passed before etcd answered (" + config_.shown + ")");
    const std::size_t idx = (start + i) % n;
    void* h = take_handle();
    Transfer t = perform(h, config_.endpoints[idx] + std::string(path), payload, token, deadline);
    give_handle(h);
    t.endpoint = config_.endpoints[idx];
    if (t.rc == CURLE_OK) {
      preferred_.store(idx, std::memory_order_relaxed);
      return t;
    }
    preferred_.store((idx + 1) % n, std::memory_order_relaxed);  // next call starts elsewhere
    const std::string where = "etcd " + t.endpoint + std::string(path);
    if (is_tls_setup_error(t.rc))
      throw error(ErrorCode::failed_precondition, where + ": TLS setup failed: " + t.curl_error);
    if (t.sent) {  // the outcome is unknown: never replayed on another member
      if (t.rc == CURLE_OPERATION_TIMEDOUT)
        throw error(ErrorCode::deadline_exceeded, where + ": no answer in time: " + t.curl_error);
      throw error(ErrorCode::unavailable, where + ": connection failed: " + t.curl_error);
    }
    failures += (failures.empty() ? "" : "; ") + t.endpoint + ": " + t.curl_error;
  }
  if (deadline.expired())
    throw error(ErrorCode::deadline_exceeded, "no etcd endpoint answered in time: " + failures);
  throw error(ErrorCode::unavailable, "no etcd endpoint reachable: " + failures);
}

std::string Gateway::auth_token(Deadline deadline, const std::string& rejected) {
  {
    std::lock_guard lock(mu_);
    if (!token_.empty() && token_ != rejected) return token_;
  }
  nlohmann::json req = {{"name", *config_.user}, {"password", config_.password.value_or("")}};
  Transfer t = send("/v3/auth/authenticate", req.dump(), "", deadline);
  Reply r = parse_reply(t.body, t.http_status, "etcd " + t.endpoint);
  if (!r.ok())
    throw error(ErrorCode::failed_precondition,
                "etcd authentication as user '" + *config_.user + "' failed: " + r.message);
  std::string token = r.body.value("token", "");
  if (token.empty()) throw error(ErrorCode::internal, "etcd authentication returned no token");
  std::lock_guard lock(mu_);
  token_ = token;
  return token;
}

Reply Gateway::post(std::string_view path, const nlohmann::json& request, Deadline deadline) {
  if (deadline.expired())
    throw error(ErrorCode::deadline_exceeded,
                "deadline passed before the etcd call " + std::string(path) + " was sent");
  const std::string payload = request.dump();
  std::string token = config_.user ? auth_token(deadline, "") : "";
  for (int attempt = 0;; ++attempt) {
    Transfer t = send(path, payload, token, deadline);
    Reply r = parse_reply(t.body, t.http_status, "etcd " + t.endpoint + std::string(path));
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
