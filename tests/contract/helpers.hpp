#pragma once
// Small helpers shared by the contract cases.

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "contract.hpp"

namespace leader::contract {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

inline Ms since(SteadyClock::time_point t) {
  return std::chrono::duration_cast<Ms>(SteadyClock::now() - t);
}

/// Options for a fresh elector with a short lease scaled to the backend.
inline ElectionOptions quick(const Backend& b, Ms wait = Ms{0}) {
  ElectionOptions o;
  o.wait_time = wait;
  o.lease_time = b.lease_unit;
  o.node_id = "node-" + std::to_string(reinterpret_cast<std::uintptr_t>(&o) % 100000);
  return o;
}

/// Polls `pred` every 10 ms until true or `timeout`; returns the last value.
template <class Pred>
bool eventually(Pred pred, Ms timeout) {
  auto end = SteadyClock::now() + timeout;
  while (SteadyClock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(Ms{10});
  }
  return pred();
}

/// A child process running leader_contract_child with `args`; killed (SIGKILL) when destroyed.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Reads one line of the child's stdout (empty on EOF or after `timeout`).
  std::string read_line(Ms timeout);
  /// Sends `sig`.
  void signal(int sig);
  /// Waits for exit; returns the exit status (or 128 + signal).
  int wait();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace leader::contract
