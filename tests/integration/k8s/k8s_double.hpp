#pragma once
// A private instance of the Kubernetes API double (tests/doubles/k8s) on a free port, and raw
// API access next to the store's, for the k8s integration tests.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "k8s/k8s_store.hpp"

namespace leader::k8s::test {

/// The double, started with `args` (e.g. {"--token", "t"}); killed when destroyed.
class Double {
 public:
  explicit Double(const std::vector<std::string>& args = {});
  /// "k8s://127.0.0.1:<port>?tls=false&namespace=<ns>" + `extra` ("&token=...").
  [[nodiscard]] std::string uri(const std::string& ns, const std::string& extra = "") const;
  /// A store of this double (not wrapped by open(), so api() is reachable).
  [[nodiscard]] std::shared_ptr<K8sStore> store(const std::string& ns,
                                                const std::string& extra = "") const;
  /// POSTs `spec` to /_double/faults.
  void faults(const std::string& spec) const;
  [[nodiscard]] int port() const { return port_; }

 private:
  std::unique_ptr<leader::test::ChildProcess> process_;
  int port_ = 0;
};

/// A throwaway CA (openssl CLI) in a private directory: ca.crt/ca.key, server.crt/server.key for
/// 127.0.0.1 and localhost, client.crt/client.key (clientAuth, CN leader-client), and an unrelated
/// self-signed other.crt/other.key. Removed when destroyed.
struct TestCa {
  TestCa();
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;
  /// The path of file `name` of the directory.
  [[nodiscard]] std::string file(const char* name) const { return (dir / name).string(); }
  std::filesystem::path dir;
};

/// Environment variables set or unset for a scope, restored when destroyed.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  /// Sets `name` to `value` for the scope.
  void set(const std::string& name, const std::string& value);
  /// Unsets `name` for the scope.
  void unset(const std::string& name);

 private:
  void save(const std::string& name);
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

/// Standard base64 with padding (kubeconfig -data fields).
[[nodiscard]] std::string base64(const std::string& bytes);

/// The text of file `path`.
[[nodiscard]] std::string read_text(const std::string& path);

/// The status of a renew() result, whether the store interface returns a LeaseStatus or a
/// Renewal (the kit's interface change lands next to these tests).
template <class Result>
LeaseStatus status_of(const Result& r) {
  if constexpr (std::is_same_v<Result, LeaseStatus>) {
    return r;
  } else {
    return r.status;
  }
}

/// A deadline five seconds from now.
inline Deadline soon() { return Deadline::after(std::chrono::seconds(5)); }

}  // namespace leader::k8s::test
