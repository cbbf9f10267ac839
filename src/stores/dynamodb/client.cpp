#include "client.hpp"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>

#include "replies.hpp"
#include "sigv4.hpp"

namespace leader::dynamodb {
namespace {

constexpr std::size_t kMaxIdleHandles = 8;

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Keeps the value of the `Date` response header.
std::size_t keep_date(char* data, std::size_t size, std::size_t n, void* out) {
  std::string_view line(data, size * n);
  if (line.size() > 5 && strncasecmp(line.data(), "date:", 5) == 0) {
    line.remove_prefix(5);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
    *static_cast<std::string*>(out) = std::string(line);
  }
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

BackendError error(ErrorCode code, const std::string& message) {
  return BackendError(code, "dynamodb", message);
}

bool is_tls_setup_error(CURLcode rc) {
  return rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION ||
         rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_SSL_CIPHER ||
         rc == CURLE_SSL_ISSUER_ERROR;
}

}  // namespace

// "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException" -> the part after '#'.
Response parse_response(const std::string& text, long status) {
  Response r;
  r.http_status = status;
  r.body = text.empty() ? nlohmann::json::object()
                        : nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (r.body.is_discarded() || !r.body.is_object()) {
    r.error_type = status == 200 ? "MalformedReply" : "HTTP" + std::to_string(status);
    r.message = text.substr(0, 200);
    r.body = nlohmann::json::object();
    return r;
  }
  if (status == 200) return r;
  auto field = [&](const char* name, const std::string& fallback) {
    auto it = r.body.find(name);
    return it != r.body.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  std::string type = field("__type", "HTTP" + std::to_string(status));
  r.error_type = type.substr(type.find('#') + 1);
  r.message = field("message", field("Message", ""));
  return r;
}

namespace {

struct Headers {
  curl_slist* list = nullptr;
  ~Headers() { curl_slist_free_all(list); }
  void add(const std::string& line) { list = curl_slist_append(list, line.c_str()); }
};

// The signed header set of one call: content-type, host, x-amz-date, x-amz-target (and the
// session token), then Authorization; "Expect:" stops curl's 100-continue round trip.
void signed_headers(const Config& config, std::string_view op, const std::string& payload,
                    Headers& out) {
  const std::string date = amz_date(std::chrono::system_clock::now());
  SigningRequest sr;
  sr.headers = {{"content-type", "application/x-amz-json-1.0"},
                {"host", config.authority},
                {"x-amz-date", date},
                {"x-amz-target", "DynamoDB_20120810." + std::string(op)}};
  if (!config.session_token.empty())
    sr.headers.emplace_back("x-amz-security-token", config.session_token);
  sr.payload = payload;
  sr.region = config.region;
  sr.amz_date = date;
  const Signature sig = sign_v4(sr, config.access_key_id, config.secret_access_key);
  for (const auto& [name, value] : sr.headers)
    out.add(std::string(name).append(": ").append(value));
  out.add("Authorization: " + sig.authorization);
  out.add("Expect:");
}

// `text` (a server's error message) with the secret key and the session token replaced: an
// InvalidSignatureException echoes the canonical request, session token header included.
std::string without_secrets(std::string text, const Config& config) {
  for (const std::string* secret : {&config.secret_access_key, &config.session_token}) {
    if (secret->empty()) continue;
    for (auto at = text.find(*secret); at != std::string::npos; at = text.find(*secret, at + 3))
      text.replace(at, secret->size(), "***");
  }
  return text;
}

}  // namespace

std::optional<std::int64_t> parse_http_date(std::string_view value) {
  std::tm tm{};
  const std::string text(value);
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  const std::time_t secs = timegm(&tm);
  if (secs == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<std::int64_t>(secs) * 1000;
}

ErrorCode error_code_for(std::string_view type, long http_status) {
  static constexpr std::array<std::string_view, 8> kTransient = {
      "ProvisionedThroughputExceededException",
      "ThrottlingException",
      "RequestLimitExceeded",
      "LimitExceededException",
      "InternalServerError",
      "ServiceUnavailable",
      "TransactionConflictException",
      "ItemCollectionSizeLimitExceededException"};
  static constexpr std::array<std::string_view, 10> kConfig = {
      "UnrecognizedClientException",  "InvalidSignatureException",
      "AccessDeniedException",        "MissingAuthenticationTokenException",
      "IncompleteSignatureException", "ExpiredTokenException",
      "InvalidClientTokenId",         "SignatureDoesNotMatch",
      "ResourceNotFoundException",    "ResourceInUseException"};
  if (std::find(kTransient.begin(), kTransient.end(), type) != kTransient.end())
    return ErrorCode::unavailable;
  if (std::find(kConfig.begin(), kConfig.end(), type) != kConfig.end())
    return ErrorCode::failed_precondition;
  if (http_status >= 500) return ErrorCode::unavailable;
  return ErrorCode::internal;
}

Client::Client(Config config) : config_(std::move(config)) { global_init(); }

Client::~Client() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Client::take_handle() {
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

void Client::give_handle(void* curl) {
  std::lock_guard lock(mu_);
  if (idle_.size() < kMaxIdleHandles) {
    idle_.push_back(curl);
    return;
  }
  curl_easy_cleanup(static_cast<CURL*>(curl));
}

Response Client::post(std::string_view op, const nlohmann::json& request, Deadline deadline) {
  const std::string where = "DynamoDB " + std::string(op) + " at " + config_.endpoint;
  if (deadline.expired()) throw error(ErrorCode::deadline_exceeded, where + ": deadline passed");
  const std::string payload = request.dump();
  Headers headers;
  signed_headers(config_, op, payload, headers);

  long total = std::max<long>(1, static_cast<long>(deadline.remaining().count()));
  if (config_.request_timeout.count() > 0)
    total = std::min(total, static_cast<long>(config_.request_timeout.count()));
  const long connect = std::min(total, static_cast<long>(config_.connect_timeout.count()));
  std::string body, date;
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* h = static_cast<CURL*>(take_handle());
  curl_easy_setopt(h, CURLOPT_URL, (config_.endpoint + "/").c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, keep_date);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &date);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!config_.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, config_.ca_file.c_str());
  const CURLcode rc = curl_easy_perform(h);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  give_handle(h);
  if (rc != CURLE_OK) {
    const std::string text = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    if (is_tls_setup_error(rc))
      throw error(ErrorCode::failed_precondition, where + ": TLS setup failed: " + text);
    if (rc == CURLE_OPERATION_TIMEDOUT)
      throw error(ErrorCode::deadline_exceeded, where + ": no answer in time: " + text);
    throw error(ErrorCode::unavailable, where + ": " + text);
  }
  Response r = parse_response(body, status);
  r.server_time_ms = parse_http_date(date);
  return r;
}

nlohmann::json Client::call(std::string_view op, const nlohmann::json& request, Deadline deadline) {
  Response r = post(op, request, deadline);
  if (!r.ok()) fail(r, op);
  return std::move(r.body);
}

void Client::fail(const Response& r, std::string_view what) const {
  std::string text = "DynamoDB " + std::string(what) + " on table '" + config_.table + "' at " +
                     config_.endpoint + " failed: " + r.error_type;
  if (!r.message.empty()) text += ": " + without_secrets(r.message, config_);
  throw error(error_code_for(r.error_type, r.http_status), text);
}

}  // namespace leader::dynamodb
