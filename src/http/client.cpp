#include "client.hpp"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <mutex>

#include "endpoint.hpp"
#include "leader/errors.hpp"

static_assert(LIBCURL_VERSION_NUM >= 0x075000,
              "leader::http needs libcurl >= 7.80 (PREREQFUNCTION)");

namespace leader::http {
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Replaces every occurrence of `secret` in `text` by "***".
void scrub(std::string& text, const std::string& secret) {
  if (secret.empty()) return;
  for (auto at = text.find(secret); at != std::string::npos; at = text.find(secret, at + 3))
    text.replace(at, secret.size(), "***");
}

// Failures that no retry fixes: the server's certificate, or our own TLS files.
bool is_tls_configuration_error(CURLcode rc) {
  switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
      return true;
    default:
      return false;
  }
}

struct Headers {
  curl_slist* list = nullptr;
  Headers() = default;
  Headers(const Headers&) = delete;
  Headers& operator=(const Headers&) = delete;
  ~Headers() { curl_slist_free_all(list); }
  void add(const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next == nullptr) throw std::bad_alloc();
    list = next;
  }
};

}  // namespace

std::string_view to_string(Method method) {
  switch (method) {
    case Method::get:
      return "GET";
    case Method::post:
      return "POST";
    case Method::put:
      return "PUT";
    case Method::patch:
      return "PATCH";
    case Method::delete_:
      return "DELETE";
  }
  return "GET";
}

std::optional<std::string_view> Response::header(std::string_view name) const {
  for (const Header& h : headers)
    if (same_name(h.name, name)) return std::string_view(h.value);
  return std::nullopt;
}

struct Client::Pool {
  std::vector<detail::Endpoint> endpoints;
  std::atomic<std::size_t> preferred{0};  // the endpoint that answered last
  mutable std::mutex mu;
  std::vector<CURL*> idle;       // easy handles, each with its kept-alive connections
  std::vector<Header> defaults;  // default headers (set_default_header may change them)

  CURL* take() {
    {
      std::lock_guard lock(mu);
      if (!idle.empty()) {
        CURL* h = idle.back();
        idle.pop_back();
        return h;
      }
    }
    CURL* h = curl_easy_init();
    if (h == nullptr) throw std::bad_alloc();
    return h;
  }
  void give(CURL* h, std::size_t keep) {
    {
      std::lock_guard lock(mu);
      if (idle.size() < keep) {
        idle.push_back(h);
        return;
      }
    }
    curl_easy_cleanup(h);
  }
};

// One transfer to one base URL.
struct Client::Attempt {
  std::size_t index = 0;
  CURLcode rc = CURLE_OK;
  bool sent = false;       // PREREQFUNCTION ran: the request was possibly sent
  bool too_large = false;  // the reply passed max_response_bytes
  std::size_t limit = 0;
  Response response;
  std::string error;   // libcurl's reason
  bool ended = false;  // a stream ended by its caller, its stop token or its deadline: no error
};

// What stream() adds to one transfer.
struct Client::Stream {
  const std::function<bool(std::string_view)>* on_body;
  const std::stop_token* stop;
  bool refused = false;  // on_body returned false
};

namespace {

int mark_sent(void* attempt, char*, char*, int, int) {
  *static_cast<bool*>(attempt) = true;
  return CURL_PREREQFUNC_OK;
}

struct BodySink {
  std::string* body;
  std::size_t limit;
  bool* too_large;
};

std::size_t keep_body(char* data, std::size_t size, std::size_t n, void* out) {
  auto* sink = static_cast<BodySink*>(out);
  if (sink->body->size() + size * n > sink->limit) {
    *sink->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  sink->body->append(data, size * n);
  return size * n;
}

// Runs one transfer on its own multi handle so that a stop request wakes the wait at once;
// returns the transfer's result, or nullopt when `stop` ended it.
std::optional<CURLcode> perform_stoppable(CURL* h, const std::stop_token& stop) {
  CURLM* m = curl_multi_init();
  if (m == nullptr) throw std::bad_alloc();
  curl_multi_add_handle(m, h);
  std::optional<CURLcode> rc;
  {
    std::stop_callback wake(stop, [m] { curl_multi_wakeup(m); });
    int running = 1;
    while (!stop.stop_requested()) {
      if (curl_multi_perform(m, &running) != CURLM_OK) {
        rc = CURLE_FAILED_INIT;
        break;
      }
      if (running == 0) {
        int left = 0;
        rc = CURLE_OK;
        while (CURLMsg* msg = curl_multi_info_read(m, &left))
          if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
        break;
      }
      curl_multi_poll(m, nullptr, 0, 1000, nullptr);
    }
  }  // the callback has returned or will not run: the multi handle may go
  curl_multi_remove_handle(m, h);
  curl_multi_cleanup(m);
  return rc;
}

std::size_t keep_header(char* data, std::size_t size, std::size_t n, void* out) {
  auto* headers = static_cast<std::vector<Header>*>(out);
  std::string_view line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // the status line of a (new) response
    headers->clear();
    return size * n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name(trimmed(line.substr(0, colon)));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  headers->push_back({std::move(name), std::string(trimmed(line.substr(colon + 1)))});
  return size * n;
}

void set_method(CURL* h, const Request& request) {
  const bool body = !request.body.empty() || request.method == Method::post ||
                    request.method == Method::put || request.method == Method::patch;
  if (request.method == Method::post) {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
  } else if (!body) {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    if (request.method != Method::get)
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, std::string(to_string(request.method)).c_str());
    return;
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, std::string(to_string(request.method)).c_str());
  }
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
}

// A PEM text as a libcurl blob (copied by libcurl when the option is set).
void set_blob(CURL* h, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl_easy_setopt(h, option, &blob);
}

void set_tls(CURL* h, const TlsOptions& tls) {
  if (!tls.ca_pem.empty()) {
    set_blob(h, CURLOPT_CAINFO_BLOB, tls.ca_pem);
  } else if (!tls.ca_file.empty()) {
    curl_easy_setopt(h, CURLOPT_CAINFO, tls.ca_file.c_str());
  }
  if (!tls.cert_pem.empty()) set_blob(h, CURLOPT_SSLCERT_BLOB, tls.cert_pem);
  if (!tls.cert_file.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, tls.cert_file.c_str());
  if (!tls.key_pem.empty()) set_blob(h, CURLOPT_SSLKEY_BLOB, tls.key_pem);
  if (!tls.key_file.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, tls.key_file.c_str());
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, tls.verify ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, tls.verify ? 2L : 0L);
}

}  // namespace

Client::Client(ClientOptions options) : options_(std::move(options)), pool_(new Pool) {
  global_init();
  pool_->endpoints = detail::parse_endpoints(options_);
  pool_->defaults = options_.default_headers;
}

Client::~Client() {
  for (CURL* h : pool_->idle) curl_easy_cleanup(h);
}

void Client::set_default_header(Header header) {
  std::lock_guard lock(pool_->mu);
  for (Header& h : pool_->defaults) {
    if (same_name(h.name, header.name)) {
      h = std::move(header);
      return;
    }
  }
  pool_->defaults.push_back(std::move(header));
}

std::string Client::redact(std::string text) const {
  std::vector<std::string> secrets = options_.secrets;
  {
    std::lock_guard lock(pool_->mu);
    for (const Header& h : pool_->defaults)
      if (h.secret) secrets.push_back(h.value);
  }
  for (const Header& h : options_.default_headers)
    if (h.secret) secrets.push_back(h.value);
  secrets.push_back(options_.tls.key_pem);
  for (const std::string& secret : secrets) scrub(text, secret);
  return text;
}

Client::Attempt Client::attempt(std::size_t index, const Request& request, Deadline deadline,
                                Stream* stream) {
  const detail::Endpoint& endpoint = pool_->endpoints[index];
  Attempt a;
  a.index = index;
  a.limit = options_.max_response_bytes;
  Headers headers;
  {
    std::lock_guard lock(pool_->mu);
    for (const Header& h : pool_->defaults) {
      const bool replaced = std::any_of(request.headers.begin(), request.headers.end(),
                                        [&](const Header& r) { return same_name(r.name, h.name); });
      if (!replaced) headers.add(h.name + ": " + h.value);
    }
  }
  for (const Header& h : request.headers) headers.add(h.name + ": " + h.value);
  headers.add("Expect:");  // no 100-continue round trip
  Headers connect_to;
  if (!endpoint.connect_to.empty()) connect_to.add(endpoint.connect_to);

  long total = std::max<long>(1, static_cast<long>(deadline.remaining().count()));
  if (options_.request_timeout.count() > 0 && stream == nullptr)
    total = std::min(total, static_cast<long>(options_.request_timeout.count()));
  const long connect = std::min(total, static_cast<long>(options_.connect_timeout.count()));
  const std::string url = endpoint.url + request.target;
  char errbuf[CURL_ERROR_SIZE] = {0};
  BodySink sink{&a.response.body, a.limit, &a.too_large};

  CURL* h = stream != nullptr ? curl_easy_init() : pool_->take();
  if (h == nullptr) throw std::bad_alloc();
  curl_easy_reset(h);  // keeps the handle's live connections and TLS session cache
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, total);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.list);
  if (connect_to.list != nullptr) curl_easy_setopt(h, CURLOPT_CONNECT_TO, connect_to.list);
  if (stream != nullptr) {
    using Write = std::size_t (*)(char*, std::size_t, std::size_t, void*);
    Write pass_body = [](char* data, std::size_t size, std::size_t n, void* out) -> std::size_t {
      auto* s = static_cast<Stream*>(out);
      if (!(*s->on_body)(std::string_view(data, size * n))) {
        s->refused = true;
        return 0;  // aborts the transfer with CURLE_WRITE_ERROR
      }
      return size * n;
    };
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, pass_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, stream);
  } else {
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  }
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, keep_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &a.response.headers);
  curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, mark_sent);
  curl_easy_setopt(h, CURLOPT_PREREQDATA, &a.sent);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  if (endpoint.tls) set_tls(h, options_.tls);
  set_method(h, request);
  if (stream == nullptr) {
    a.rc = curl_easy_perform(h);
  } else {
    const std::optional<CURLcode> rc = perform_stoppable(h, *stream->stop);
    a.rc = rc.value_or(CURLE_OK);
    a.ended = !rc || (a.rc == CURLE_WRITE_ERROR && stream->refused);
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.response.status);
  // A stream that reached its deadline after the reply's headers simply ended.
  if (stream != nullptr && a.rc == CURLE_OPERATION_TIMEDOUT && a.response.status != 0)
    a.ended = true;
  if (a.ended) a.rc = CURLE_OK;
  // Nothing of this call may stay set on the pooled handle (headers, buffers, callbacks' data).
  curl_easy_reset(h);
  if (stream != nullptr)
    curl_easy_cleanup(h);
  else
    pool_->give(h, options_.pool_size);
  a.error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(a.rc);
  a.response.base_url = endpoint.shown;
  return a;
}

Response Client::send(const Request& request, Deadline deadline) {
  return run(request, deadline, nullptr);
}

Response Client::stream(const Request& request, Deadline deadline,
                        const std::function<bool(std::string_view)>& on_body,
                        const std::stop_token& stop) {
  Stream s{&on_body, &stop};
  return run(request, deadline, &s);
}

Response Client::stream_lines(const Request& request, Deadline deadline,
                              const std::function<bool(std::string_view)>& on_line,
                              const std::stop_token& stop, std::size_t max_line) {
  std::string pending;  // the reply after the last line passed on
  std::exception_ptr failed;
  Response r = stream(
      request, deadline,
      [&](std::string_view piece) {
        pending.append(piece);
        std::size_t start = 0;
        bool more = true;
        try {
          for (auto eol = pending.find('\n'); more && eol != std::string::npos;
               eol = pending.find('\n', start)) {
            more = on_line(std::string_view(pending).substr(start, eol - start));
            start = eol + 1;
          }
        } catch (...) {  // nothing may be thrown through libcurl
          failed = std::current_exception();
          more = false;
        }
        pending.erase(0, start);
        return more && pending.size() < max_line;
      },
      stop);
  if (failed) std::rethrow_exception(failed);
  r.body = std::move(pending);
  return r;
}

Response Client::run(const Request& request, Deadline deadline, Stream* stream) {
  const std::size_t n = pool_->endpoints.size();
  const std::size_t start = pool_->preferred.load(std::memory_order_relaxed) % n;
  std::string failures;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t index = (start + i) % n;
    if (deadline.expired()) {
      Attempt late;
      late.index = index;
      late.error = "the deadline passed before the request was sent";
      if (!failures.empty()) late.error += " (" + failures + ")";
      late.rc = CURLE_OPERATION_TIMEDOUT;
      late.sent = true;  // reported as deadline_exceeded: the caller's time is up
      fail(request, late);
    }
    Attempt a = attempt(index, request, deadline, stream);
    if (a.rc == CURLE_OK) {
      pool_->preferred.store(index, std::memory_order_relaxed);
      return std::move(a.response);
    }
    pool_->preferred.store((index + 1) % n, std::memory_order_relaxed);  // next call elsewhere
    if (a.sent || a.too_large || is_tls_configuration_error(a.rc) || i + 1 == n) {
      if (!failures.empty()) a.error += " (also tried: " + failures + ")";
      fail(request, a);
    }
    failures += (failures.empty() ? "" : "; ") + pool_->endpoints[index].shown + ": " + a.error;
  }
  throw BackendError(ErrorCode::internal, options_.store, "no base URL was tried");
}

void Client::fail(const Request& request, const Attempt& a) const {
  ErrorCode code = ErrorCode::unavailable;
  std::string reason = "not sent";
  if (a.too_large) {
    code = ErrorCode::internal;
    reason = "reply larger than " + std::to_string(a.limit) + " bytes";
  } else if (a.sent) {
    code = ErrorCode::deadline_exceeded;
    reason = a.rc == CURLE_OPERATION_TIMEDOUT
                 ? "possibly sent, no reply in time (outcome unknown)"
                 : "possibly sent, no complete reply (outcome unknown)";
  } else if (is_tls_configuration_error(a.rc)) {
    code = ErrorCode::failed_precondition;
    reason = "TLS setup failed, not sent";
  }
  const std::string path = request.target.substr(0, request.target.find('?'));
  std::string text = std::string(to_string(request.method)) + " " +
                     pool_->endpoints[a.index].shown + path + ": " + reason + ": " + a.error;
  for (const Header& h : request.headers)
    if (h.secret) scrub(text, h.value);
  throw BackendError(code, options_.store, redact(std::move(text)));
}

}  // namespace leader::http
