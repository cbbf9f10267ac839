#pragma once
// Time helpers shared by the server-backed suites: polling waits, call deadlines and lock names
// unique per run.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "leader/time.hpp"

namespace leader::test {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

/// Milliseconds elapsed since `t`.
inline Ms since(SteadyClock::time_point t) {
  return std::chrono::duration_cast<Ms>(SteadyClock::now() - t);
}

/// Polls `pred` every 10 ms until it is true or `timeout` passed; returns the last value. Not a
/// timing assertion: the limit only stops a broken test from hanging.
template <class Pred>
bool eventually(Pred pred, Ms timeout = Ms{30000}) {
  auto end = SteadyClock::now() + timeout;
  while (SteadyClock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(Ms{10});
  }
  return pred();
}

/// True when `pred` stays true for the whole of `period` (polled every 10 ms).
template <class Pred>
bool stays(Pred pred, Ms period) {
  auto end = SteadyClock::now() + period;
  while (SteadyClock::now() < end) {
    if (!pred()) return false;
    std::this_thread::sleep_for(Ms{10});
  }
  return pred();
}

/// The deadline of one store call in a test: `limit` from now (5 s).
inline Deadline soon(Ms limit = Ms{5000}) { return Deadline::after(limit); }

/// A name unique to this process and call: `<prefix>-<pid>-<n>`, with only [A-Za-z0-9._-].
inline std::string unique_name(const std::string& prefix) {
  static std::atomic<int> counter{0};
  std::string name = prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '-';
  return name;
}

}  // namespace leader::test
