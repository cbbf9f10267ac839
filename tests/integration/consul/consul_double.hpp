#pragma once
// A private Consul HTTP API double (tests/doubles/consul) on a free port, stopped when destroyed,
// and helpers shared by the Consul integration tests.

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "consul/consul_store.hpp"
#include "leader/leader.hpp"

namespace leader::consul::test {

using Ms = std::chrono::milliseconds;

/// One double process; `args` are extra command-line options (e.g. "--acl-token", "t"; each
/// "--agent", "<node>" adds the agent of another node on a port of its own).
class DoubleServer {
 public:
  explicit DoubleServer(std::vector<std::string> args = {});
  /// "consul://127.0.0.1:<port>?prefix=it&session_ttl_min=100ms" plus `extra` ("&k=v...").
  [[nodiscard]] std::string uri(const std::string& extra = "") const;
  /// A store of this double.
  [[nodiscard]] std::shared_ptr<ConsulStore> store(const std::string& extra = "") const;
  /// A store talking to the agent of node `node` (one of the "--agent" arguments).
  [[nodiscard]] std::shared_ptr<ConsulStore> store_on(const std::string& node,
                                                      const std::string& extra = "") const;
  /// The default agent's node name (the double's --node).
  static constexpr const char* kNode = "consul-double";
  /// PUT `target` with the JSON `body` to the default agent; the reply's status.
  long put(const std::string& target, const std::string& body) const;

 private:
  std::unique_ptr<leader::test::ChildProcess> child_;
  int port_ = 0;
  std::vector<std::pair<std::string, int>> agents_;  // --agent nodes and their ports
};

/// The status of a renew() result, before (LeaseStatus) and after (Renewal) the kit's change.
template <class Result>
LeaseStatus status_of(const Result& r) {
  if constexpr (std::is_same_v<Result, LeaseStatus>) {
    return r;
  } else {
    return r.status;
  }
}

/// The ttl a renew() granted: the lease's (old interface, set by the store) or the result's.
template <class Result>
Duration granted_of(const Result& r, const Lease& renewed) {
  if constexpr (std::is_same_v<Result, LeaseStatus>) {
    return renewed.ttl;
  } else {
    return r.ttl;
  }
}

/// A deadline 5 s from now.
inline Deadline soon() { return Deadline::after(Ms{5000}); }
/// A single-leader request for `lock` with a fresh owner token.
LeaseRequest single(const std::string& lock, Ms ttl, int slots = 0);

}  // namespace leader::consul::test
