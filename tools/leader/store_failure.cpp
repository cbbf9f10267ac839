// Exit codes of store failures by cause (sysexits: 69 unavailable, 77 no permission, 78 config).

#include <algorithm>
#include <cctype>
#include <string_view>

#include "exit_codes.hpp"
#include "leader/errors.hpp"

namespace leader::cli {
namespace {

// Words with which the stores (and their servers) word a refused login or a missing right:
// redis "refused authentication", NOPERM, WRONGPASS; PostgreSQL "password authentication
// failed", "permission denied"; MariaDB 1045 "Access denied"; etcd, ZooKeeper "authentication";
// Kubernetes, Consul, DynamoDB 401 / 403 "Unauthorized", "Forbidden", "AccessDenied".
constexpr std::string_view kPermissionWords[] = {
    "authentication", "authenticate",  "unauthorized",   "unauthorised",   "forbidden",
    "permission",     "access denied", "accessdenied",   "noperm",         "wrongpass",
    "noauth",         "password",      "credential",     "not authorized", "acl ",
    "signature",      "auth failed",   "security token", "invalid token",  "no pg_hba.conf"};

bool names_refused_permission(std::string_view message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(std::begin(kPermissionWords), std::end(kPermissionWords),
                     [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

}  // namespace

int exit_code_for_store_error(const std::exception& error) {
  if (const auto* failure = dynamic_cast<const StoreFailure*>(&error)) return failure->exit_code();
  if (dynamic_cast<const InvalidArgument*>(&error) != nullptr) return kExitConfig;
  if (const auto* backend = dynamic_cast<const BackendError*>(&error)) {
    switch (backend->code()) {
      case ErrorCode::failed_precondition:
      case ErrorCode::invalid_argument:
        return names_refused_permission(backend->what()) ? kExitNoPermission : kExitConfig;
      default:
        return kExitUnavailable;
    }
  }
  return kExitUnavailable;
}

StoreFailure store_failure(const std::string& context, const std::exception& error) {
  return StoreFailure(context + ": " + error.what(), exit_code_for_store_error(error));
}

}  // namespace leader::cli
