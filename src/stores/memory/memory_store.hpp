#pragma once
/// @file memory_store.hpp
/// The memory store's URI door (`memory:` or `memory:NAME`). Internal to leader::memory: users
/// open it with leader::open(uri) or make a private one with leader::make_memory_store().

#include <memory>

#include "leader/store.hpp"
#include "leader/uri.hpp"

namespace leader::memory {

/// The store of `uri`: every store opened with the same NAME shares one state in this process.
/// Throws InvalidArgument for a host, a parameter, or a NAME that breaks the lock-name rules.
std::shared_ptr<LeaseStore> open_named(const Uri& uri);

}  // namespace leader::memory
