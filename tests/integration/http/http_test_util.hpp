#pragma once
// Test helpers for leader::http: the local server double (http_double.py) as a child process,
// throwaway certificates, closed and silent ports.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "http/client.hpp"
#include "leader/errors.hpp"

namespace leader::httptest {

using Ms = std::chrono::milliseconds;

/// http_double.py running on a free loopback port; killed when destroyed.
class Double {
 public:
  /// Starts the server; `args` are its options (e.g. --cert F --key F).
  explicit Double(const std::vector<std::string>& args = {});
  /// The server's port.
  [[nodiscard]] int port() const { return port_; }
  /// "http://127.0.0.1:<port>" (or https://).
  [[nodiscard]] std::string url(bool tls = false) const;

 private:
  test::ChildProcess child_;
  int port_ = 0;
};

/// A CA, a server certificate (SAN 127.0.0.1, localhost) and a client certificate, made once per
/// test binary under a private temporary directory.
struct Certs {
  std::string dir, ca, server_crt, server_key, client_crt, client_key, other_ca;
  /// The certificates of this test binary (made on first use).
  static const Certs& get();
};

/// A port on 127.0.0.1 where nothing listens (connections are refused).
[[nodiscard]] int closed_port();

/// A socket listening on 127.0.0.1 that never accepts: the kernel completes connections, nothing
/// ever answers. Closed when destroyed.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  /// "http://127.0.0.1:<port>".
  [[nodiscard]] std::string url() const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// Options of a client of `urls` with the store name "test".
[[nodiscard]] http::ClientOptions options(std::vector<std::string> urls);

/// The code of the BackendError `f` throws (fails the test when it throws none); its message
/// goes to `what`.
ErrorCode code_of(const std::function<void()>& f, std::string* what = nullptr);

/// The JSON object of an /echo reply.
[[nodiscard]] nlohmann::json echoed(const http::Response& r);

}  // namespace leader::httptest
