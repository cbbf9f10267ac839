#pragma once
/// @file memory.hpp
/// The in-process store (URI `memory:` or `memory:NAME`): for tests and single-process use. Stores
/// opened with the same NAME share state within the process. Expiry follows the injected clock.

#include <memory>
#include <string>

#include "leader/store.hpp"

namespace leader {

/// Options of a memory store.
struct MemoryStoreOptions {
  std::shared_ptr<Clock> clock{};  ///< default: Clock::system()
};

/// Creates a private memory store.
std::shared_ptr<LeaseStore> make_memory_store(MemoryStoreOptions options = {});

/// Test hook: while set, every call on stores sharing `store`'s state throws
/// BackendError(unavailable), as if the backend were down.
void set_memory_store_unavailable(LeaseStore& store, bool unavailable);

}  // namespace leader
