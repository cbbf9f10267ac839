#pragma once
/// @file names.hpp
/// Lock-name rules: 1..255 characters matching `^[A-Za-z0-9][A-Za-z0-9_.:-]*$`. `:` separates
/// tenant scopes: `for_tenant("acme")` maps `job` to `tenant:acme:job`.

#include <string>
#include <string_view>

namespace leader {

/// Longest lock name accepted.
inline constexpr std::size_t kMaxLockNameLength = 255;

/// Throws InvalidArgument naming `name` and the rule it breaks.
void validate_lock_name(std::string_view name);
/// True when `name` follows the lock-name rules.
[[nodiscard]] bool is_valid_lock_name(std::string_view name) noexcept;
/// Validates a tenant id (a lock name without `:`).
void validate_tenant_id(std::string_view tenant);
/// `tenant:<tenant>:<name>`; both parts are validated and may not contain `:`.
[[nodiscard]] std::string tenant_lock_name(std::string_view tenant, std::string_view name);

/// A fresh random 128-bit owner token as 32 lower-case hex characters.
[[nodiscard]] std::string new_owner_token();
/// "<hostname>:<pid>".
[[nodiscard]] std::string default_node_id();

}  // namespace leader
