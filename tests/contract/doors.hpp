#pragma once
// The doors of the library (issue 37, "every door, judged"): each runs an action under a lease of
// one elector its own way. The judged cases run through every door, on every backend and topology
// the contract runs on, so a door cannot skip the engine's guarantees.

#include <functional>
#include <future>
#include <string>

#include "leader/leader.hpp"

namespace leader::contract {

/// Runs `action` under a lease of `elector` on `lock` through one door and waits for the outcome.
/// A dispatching door's executor first runs nothing else until `busy_until` is ready (when it is
/// valid): an executor busy while the lease is acquired.
using DoorRun = std::function<RunResult<void>(const LeaderElector& elector, const std::string& lock,
                                              std::function<void(LeaderContext&)> action,
                                              std::shared_future<void> busy_until)>;

/// One door.
struct Door {
  const char* name;  ///< blocking, futures, executor, asio, campaign
  DoorRun run;
  /// The action is handed to an executor of the caller's, so it may start late (executor, asio).
  bool dispatches = false;
};

/// The door named `name`, or nullptr when this build lacks it (asio without libasio-dev; the C
/// interface outside the project's own contract programs).
const Door* find_door(const std::string& name);

/// Adds a door that lives outside the kit (the C interface's: tests/contract/c_door.cpp, linked
/// into the project's own programs). Call before the tests run (a static initializer).
bool register_door(Door door);

}  // namespace leader::contract
