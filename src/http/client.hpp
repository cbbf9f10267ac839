#pragma once
// leader::http: the one HTTP/JSON transport of the HTTP stores (etcd, DynamoDB, Kubernetes,
// Consul), over libcurl. Internal: stores link the CMake target `leader_http` PRIVATE and include
// "http/client.hpp"; nothing here is public API.
//
// What it does NOT do: no retries, no redirects, no replay of a sent request. A request goes to
// the next base URL only when it was certainly not sent (see "Errors").
//
// Thread-safety: a Client is safe to use from any number of threads at once. Each send() borrows
// one libcurl easy handle (with its kept-alive connections) from a pool; at most `pool_size`
// idle handles are kept, more are created while more calls run at once and closed afterwards.
//
// Deadline: every send() ends by its Deadline. The time left becomes CURLOPT_TIMEOUT_MS (capped
// by `request_timeout` when set) and CURLOPT_CONNECTTIMEOUT_MS is min(connect_timeout, that).
//
// "Possibly sent": a CURLOPT_PREREQFUNCTION callback marks the attempt as sent. libcurl calls it
// after the connection is made (TCP connect and TLS handshake done, or an idle connection
// reused) and just before it writes the first byte of the request; nothing before that point
// can reach the server's application. So a failure before the callback means "certainly not
// sent", and any failure after it means "possibly sent, outcome unknown". (libcurl may itself
// resend a request once on a new connection when a reused connection closed before any reply
// byte; the callback runs again, the attempt stays "possibly sent".)
//
// Errors (BackendError, store() = ClientOptions::store):
// - an HTTP reply, whatever its status (404, 409, 500...), is a Response, never an exception;
// - unavailable: the request was certainly not sent to any base URL (name resolution failed,
//   connection refused or timed out, TLS handshake failed); retrying is safe;
// - deadline_exceeded: the request was possibly sent and no complete reply came (timeout,
//   connection reset or closed mid-reply): its outcome is unknown, callers must not blindly
//   replay a write. Also thrown when the deadline had passed before anything was sent;
// - failed_precondition: TLS configuration that no retry fixes (the server's certificate failed
//   verification, the CA / client certificate / key file is unusable); nothing was sent;
// - internal: a reply larger than `max_response_bytes`, or a libcurl failure of no other kind.
// Messages name the store, the method, the base URL and the path (never the query string) and
// libcurl's reason. Secret header values and `secrets` are replaced by "***" in every message.

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "leader/time.hpp"

namespace leader::http {

/// One HTTP header.
struct Header {
  std::string name;     ///< e.g. "Authorization"; matched case-insensitively
  std::string value;    ///< the value, without the trailing CRLF
  bool secret = false;  ///< a credential (bearer token, password): never shown in any message
};

/// TLS settings; they apply to https:// base URLs (TLS is on exactly for those).
struct TlsOptions {
  std::string ca_file;      ///< CA bundle (PEM) to verify the server; empty = the system store
  std::string cert_file;    ///< client certificate (PEM) for mutual TLS; empty = none
  std::string key_file;     ///< the client certificate's private key (PEM)
  bool verify = true;       ///< verify the server's chain and name; false only for tests
  std::string server_name;  ///< name used for SNI, the certificate check and the Host header in
                            ///< place of the base URL's host (which is still where it connects)
  std::string ca_pem;       ///< CA bundle as PEM text (CURLOPT_CAINFO_BLOB); replaces ca_file
  std::string cert_pem;     ///< client certificate as PEM text (CURLOPT_SSLCERT_BLOB)
  std::string key_pem;      ///< its key as PEM text (CURLOPT_SSLKEY_BLOB; secret, never shown)
};

/// How a Client reaches its server.
struct ClientOptions {
  std::string store;                   ///< the store scheme named in errors, e.g. "etcd"
  std::vector<std::string> base_urls;  ///< "http[s]://host[:port][/path]", at least one; tried
                                       ///< from the last one that answered, in order
  TlsOptions tls;                      ///< for https:// base URLs
  std::size_t pool_size = 8;           ///< idle handles (kept-alive connections) kept, >= 1
  Duration connect_timeout = std::chrono::seconds(1);  ///< bound of one connect (TCP + TLS)
  Duration request_timeout = Duration{0};  ///< bound of one send(); 0 = the deadline only
  std::vector<Header> default_headers;     ///< sent with every request unless it overrides them
  std::vector<std::string> secrets;        ///< further strings never shown in messages
  std::size_t max_response_bytes = std::size_t{64} << 20;  ///< larger replies are refused
};

/// An HTTP method.
enum class Method { get, post, put, patch, delete_ };

/// One request: method, target (path and query), headers and body.
struct Request {
  Method method = Method::get;
  std::string target;           ///< appended to the base URL, e.g. "/v3/kv/txn?x=1"
  std::vector<Header> headers;  ///< replace default headers of the same name
  std::string body;             ///< sent as is (Content-Length); empty = no body
};

/// One complete HTTP reply.
struct Response {
  long status = 0;              ///< the HTTP status, e.g. 200 or 409
  std::vector<Header> headers;  ///< the reply's headers, names lower-cased, values trimmed
  std::string body;             ///< the reply's body
  std::string base_url;         ///< the base URL that answered
  /// The value of the first header named `name` (case-insensitive), or nullopt.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  /// True for a 2xx status.
  [[nodiscard]] bool success() const { return status >= 200 && status < 300; }
};

/// A pooled, thread-safe HTTP client of one server (or of the members of one cluster).
class Client {
 public:
  /// Checks and keeps `options`; connects lazily. Throws InvalidArgument for a base URL that is
  /// not http(s)://host..., carries a user or password, or TLS files given without https.
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Sends `request` and returns the server's reply, or throws BackendError as described above.
  [[nodiscard]] Response send(const Request& request, Deadline deadline);
  /// A streamed reply (etcd's /v3/watch, long polls): sends `request` on a connection of its own
  /// (never pooled: a long wait holds no pooled handle, ends with the call) and passes each piece
  /// of the body to `on_body` as it arrives (pieces are not aligned to messages). The transfer
  /// ends when the server ends the reply, when `on_body` returns false, when `stop` is requested
  /// (at once: the wait is woken) or at `deadline` once the reply's headers came; these return
  /// the Response with its status and headers and an empty body. `request_timeout` does not
  /// apply, `max_response_bytes` does not either (nothing is kept). Other failures as send().
  [[nodiscard]] Response stream(const Request& request, Deadline deadline,
                                const std::function<bool(std::string_view)>& on_body,
                                const std::stop_token& stop);
  /// stream() of a reply made of lines (etcd's /v3/watch, Kubernetes watches: one JSON object a
  /// line): passes each complete line, without its '\n', to `on_line` until it returns false.
  /// An exception `on_line` throws ends the transfer and is rethrown from here. The Response's
  /// body is what followed the last '\n' passed on (an error reply's Status, a line cut short);
  /// an unfinished line of `max_line` bytes or more ends the transfer there.
  [[nodiscard]] Response stream_lines(const Request& request, Deadline deadline,
                                      const std::function<bool(std::string_view)>& on_line,
                                      const std::stop_token& stop,
                                      std::size_t max_line = std::size_t(-1));
  /// Adds or replaces (by name) a default header, e.g. a refreshed bearer token.
  void set_default_header(Header header);
  /// `text` with every secret (secret header values, `secrets`) replaced by "***".
  [[nodiscard]] std::string redact(std::string text) const;
  /// The options this client was made with (default headers as at construction).
  [[nodiscard]] const ClientOptions& options() const { return options_; }

 private:
  struct Pool;
  struct Attempt;
  struct Stream;
  Response run(const Request& request, Deadline deadline, Stream* stream);
  Attempt attempt(std::size_t index, const Request& request, Deadline deadline, Stream* stream);
  [[noreturn]] void fail(const Request& request, const Attempt& a) const;

  ClientOptions options_;
  std::unique_ptr<Pool> pool_;
};

/// The name of a method as sent on the request line, e.g. "DELETE".
[[nodiscard]] std::string_view to_string(Method method);

}  // namespace leader::http
