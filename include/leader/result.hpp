#pragma once
/// @file result.hpp
/// RunResult<T>: Elected{value, lease} / Skipped{reason} / ActionFailed{exception}.

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "leader/time.hpp"

namespace leader {

/// Why a call did not run its action.
enum class SkipReason {
  contention,     ///< another owner held the lock (after waiting wait_time)
  backend_error,  ///< the store failed and the caller chose OnBackendError::skip
  cancelled,      ///< the caller's stop_token was triggered before the lease was acquired
  /// The lease was acquired but lost (its local deadline passed, or the store said so) before
  /// the action could start: an executor that ran the action late. Another owner may hold it.
  lease_lost,
};

/// "contention", "backend_error", "cancelled", "lease_lost".
std::string_view to_string(SkipReason reason) noexcept;

/// What was held while the action ran.
struct LeaseInfo {
  std::string lock{};
  std::string node_id{};
  std::uint64_t fencing_token = 0;  ///< 0 only when fail_open
  int slot = 0;
  Duration lease_time{};
  TimePoint acquired_at{};  ///< local steady time the acquire was sent
  bool fail_open = false;   ///< ran without the lock because the store failed (OnBackendError)
  /// The ttl the store granted at acquisition: lease_time, or less when the store caps it
  /// (ZooKeeper session timeouts); 0 when fail_open. Check kill/grace budgets against this.
  Duration granted_ttl{};
};

/// The action ran and returned.
template <class T>
struct Elected {
  T value;
  LeaseInfo lease{};
};
template <>
struct Elected<void> {
  LeaseInfo lease{};
};

/// The action did not run.
struct Skipped {
  SkipReason reason = SkipReason::contention;
  std::string detail{};  ///< e.g. the backend error message, or the holder's node id
};

/// The action ran and threw; the lease was released.
struct ActionFailed {
  std::exception_ptr error{};
  LeaseInfo lease{};
};

/// The outcome of run_if_leader_result.
template <class T>
class [[nodiscard]] RunResult {
 public:
  enum class Kind { elected, skipped, action_failed };
  using Variant = std::variant<Elected<T>, Skipped, ActionFailed>;

  RunResult(Elected<T> e) : v_(std::move(e)) {}    // NOLINT(google-explicit-constructor)
  RunResult(Skipped s) : v_(std::move(s)) {}       // NOLINT(google-explicit-constructor)
  RunResult(ActionFailed f) : v_(std::move(f)) {}  // NOLINT(google-explicit-constructor)

  /// Which alternative this is.
  [[nodiscard]] Kind kind() const { return static_cast<Kind>(v_.index()); }
  [[nodiscard]] bool elected() const { return kind() == Kind::elected; }
  [[nodiscard]] bool skipped() const { return kind() == Kind::skipped; }
  [[nodiscard]] bool failed() const { return kind() == Kind::action_failed; }
  /// The action's value; throws std::bad_variant_access unless elected.
  template <class U = T, class = std::enable_if_t<!std::is_void_v<U>>>
  [[nodiscard]] const U& value() const {
    return std::get<Elected<T>>(v_).value;
  }
  /// The lease of an elected or failed run; nullptr when skipped.
  [[nodiscard]] const LeaseInfo* lease() const {
    if (auto* e = std::get_if<Elected<T>>(&v_)) return &e->lease;
    if (auto* f = std::get_if<ActionFailed>(&v_)) return &f->lease;
    return nullptr;
  }
  /// Why it was skipped; throws std::bad_variant_access unless skipped.
  [[nodiscard]] SkipReason skip_reason() const { return std::get<Skipped>(v_).reason; }
  /// The action's exception; throws std::bad_variant_access unless failed.
  [[nodiscard]] std::exception_ptr error() const { return std::get<ActionFailed>(v_).error; }
  /// The underlying variant, for std::visit.
  [[nodiscard]] const Variant& variant() const { return v_; }

 private:
  Variant v_;
};

}  // namespace leader
