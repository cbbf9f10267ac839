#pragma once
/// @file memory.hpp
/// The in-process store (URI `memory:` or `memory:NAME`): for tests and single-process use. Stores
/// opened with the same NAME share state within the process. Expiry follows the injected clock.

#include <memory>
#include <string>

#include "leader/store.hpp"

namespace leader {
namespace memory {

/// The settings of a memory store made by make_memory_store().
struct Config {
  std::shared_ptr<Clock> clock{};  ///< default: Clock::system()
};

}  // namespace memory

/// The former spelling of memory::Config.
using MemoryStoreOptions [[deprecated("use leader::memory::Config")]] = memory::Config;

/// Creates a private memory store.
std::shared_ptr<LeaseStore> make_memory_store(memory::Config config = {});

/// Test hook: while set, every call on stores sharing `store`'s state throws
/// BackendError(unavailable), as if the backend were down.
void set_memory_store_unavailable(LeaseStore& store, bool unavailable);

}  // namespace leader
