#pragma once
// Small helpers shared by the contract cases; the reusable parts live in tests/support.

#include <chrono>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "contract.hpp"
#include "timing.hpp"

namespace leader::contract {

using test::eventually;
using test::since;
using test::soon;
using test::stays;
using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

/// Options for a fresh elector with a short lease scaled to the backend and its own node id.
inline ElectionOptions quick(const Backend& b, Ms wait = Ms{0}) {
  ElectionOptions o;
  o.wait_time = wait;
  o.lease_time = b.lease_unit;
  o.node_id = test::unique_name("node");
  return o;
}

/// A child process running the backend's child program (leader_contract_child) with `args` (and
/// extra environment `env`); killed (SIGKILL) when destroyed. Only in cases that checked
/// LEADER_CONTRACT_NEEDS(processes).
class Child : public test::ChildProcess {
 public:
  Child(const Backend& b, const std::vector<std::string>& args,
        const std::vector<std::string>& env = {})
      : test::ChildProcess(with_program(b.child, args), env) {}

 private:
  static std::vector<std::string> with_program(const std::string& program,
                                               const std::vector<std::string>& args) {
    std::vector<std::string> full{program};
    full.insert(full.end(), args.begin(), args.end());
    return full;
  }
};

}  // namespace leader::contract
