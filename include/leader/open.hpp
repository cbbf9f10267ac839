#pragma once
/// @file open.hpp
/// `leader::open(uri)`: the store registry. Each store component registers its URI schemes when
/// it is linked (link `leader::<store>`).

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leader/store.hpp"
#include "leader/uri.hpp"

namespace leader {

/// Opens a store from a URI such as "sqlite:///var/lib/app/leader.db" or
/// "redis://127.0.0.1:6379". Unknown schemes and malformed URIs throw InvalidArgument; a store
/// that cannot be reached throws BackendError.
std::shared_ptr<LeaseStore> open(std::string_view uri);

/// Creates a store from a parsed URI.
using StoreFactory = std::function<std::shared_ptr<LeaseStore>(const Uri&)>;

/// Registers `factory` for `scheme` (called by store components at static-initialisation time).
void register_store(std::string scheme, StoreFactory factory);

/// The schemes registered in this program, sorted.
[[nodiscard]] std::vector<std::string> registered_schemes();

}  // namespace leader
