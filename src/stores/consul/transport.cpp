#include "transport.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

#include "leader/errors.hpp"

namespace leader::consul {
namespace {

struct Sink {
  std::string body;
  std::string index;
  bool sent = false;  // libcurl reached the point of writing the request
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  static_cast<Sink*>(user)->body.append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "x-consul-index:";
  if (line.size() > kName.size()) {
    std::string head(line.substr(0, kName.size()));
    std::transform(head.begin(), head.end(), head.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (head == kName) {
      std::string v(line.substr(kName.size()));
      v.erase(std::remove_if(v.begin(), v.end(), [](unsigned char c) { return std::isspace(c); }),
              v.end());
      static_cast<Sink*>(user)->index = v;
    }
  }
  return size * n;
}

int on_prereq(void* user, char*, char*, int, int) {
  static_cast<Sink*>(user)->sent = true;
  return CURL_PREREQFUNC_OK;
}

bool certainly_not_sent(CURLcode rc, const Sink& sink) {
  if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_CONNECT ||
      rc == CURLE_COULDNT_RESOLVE_PROXY)
    return true;
  return !sink.sent;
}

}  // namespace

Transport::Transport(const Config& config) : config_(config) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Transport::~Transport() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Transport::take() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void Transport::give(void* handle) {
  std::lock_guard lock(mu_);
  if (idle_.size() < static_cast<std::size_t>(config_.pool_size)) {
    idle_.push_back(handle);
    return;
  }
  curl_easy_cleanup(static_cast<CURL*>(handle));
}

Reply Transport::send(std::string_view method, const std::string& target, const std::string& body,
                      Deadline deadline) {
  const long left = static_cast<long>(deadline.remaining().count());
  if (left <= 0)
    throw BackendError(ErrorCode::deadline_exceeded, "consul",
                       "deadline passed before " + std::string(method) + " was sent");
  CURL* c = static_cast<CURL*>(take());
  if (!c) throw BackendError(ErrorCode::internal, "consul", "curl_easy_init failed");
  curl_easy_reset(c);
  Sink sink;
  const std::string url = config_.base_url + target;
  curl_slist* headers = nullptr;
  if (!config_.token.empty())
    headers = curl_slist_append(headers, ("X-Consul-Token: " + config_.token).c_str());
  headers = curl_slist_append(headers, "Expect:");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  if (method != "GET") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   std::min(left, static_cast<long>(config_.connect_timeout.count())));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &sink);
  curl_easy_setopt(c, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(c, CURLOPT_PREREQDATA, &sink);
  if (config_.tls) {
    if (!config_.tls_ca.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, config_.tls_ca.c_str());
    if (!config_.tls_cert.empty()) curl_easy_setopt(c, CURLOPT_SSLCERT, config_.tls_cert.c_str());
    if (!config_.tls_key.empty()) curl_easy_setopt(c, CURLOPT_SSLKEY, config_.tls_key.c_str());
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, config_.tls_verify ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, config_.tls_verify ? 2L : 0L);
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  Reply reply;
  if (rc == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
    give(c);
    reply.body = std::move(sink.body);
    reply.consul_index = std::move(sink.index);
    return reply;
  }
  curl_easy_cleanup(c);
  const std::string what = std::string(method) + " " + config_.base_url +
                           target.substr(0, target.find('?')) + ": " + curl_easy_strerror(rc);
  if (rc == CURLE_SSL_CACERT_BADFILE || rc == CURLE_SSL_CERTPROBLEM ||
      rc == CURLE_PEER_FAILED_VERIFICATION)
    throw BackendError(ErrorCode::failed_precondition, "consul", what);
  if (certainly_not_sent(rc, sink)) throw BackendError(ErrorCode::unavailable, "consul", what);
  throw BackendError(ErrorCode::deadline_exceeded, "consul", what + " (outcome unknown)");
}

}  // namespace leader::consul
