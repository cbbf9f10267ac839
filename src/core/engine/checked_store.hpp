#pragma once
// CheckedStore: the wrapper every store returned by leader::open() and make_memory_store() passes
// through (internal; reach it with detail::checked() / detail::unchecked() from
// <leader/detail/store_support.hpp>). It does once, with the same limits for every store, what
// each store used to do on its own:
// - validates requests, leases and candidates before any I/O (InvalidArgument naming the value
//   and the rule it broke);
// - refuses a deadline that has already passed before any I/O (BackendError deadline_exceeded,
//   as the stores reported it; nothing is sent);
// - stamps Lease::sent_at of a grant the store left empty with the local time the call started;
// - maps a stray exception (anything that is not a leader::Error) to BackendError{internal}
//   naming the store scheme and the operation, so no client library's exception escapes;
// - refuses a grant of another owner (a store defect: renewals would miss the lease), on the
//   blocking and the asynchronous attempts (AsyncAttempts) alike.
// A store behind it checks only what its own encoding needs beyond these rules.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leader/detail/capabilities.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/forwarding_store.hpp"
#include "leader/lock_listing.hpp"
#include "leader/store.hpp"

namespace leader::detail {

/// The failure of check_grant_owner() for `granted` (out of line: the check itself is inline).
[[noreturn]] void refuse_grant_of_another_owner(std::string_view scheme,
                                                const LeaseRequest& request, const Lease& granted);
/// Throws BackendError{internal} (naming `scheme`) when `got` is a grant to another owner than
/// `request`'s: a store defect (renewals would miss the lease). The one owner check of a grant,
/// for the CheckedStore and for an elector on a store without one.
inline void check_grant_owner(std::string_view scheme, const LeaseRequest& request,
                              const Acquired& got) {
  if (got.lease && got.lease->owner != request.owner)
    refuse_grant_of_another_owner(scheme, request, *got.lease);
}

/// True when `store` is a CheckedStore itself (not one under a wrapper).
[[nodiscard]] bool is_checked(LeaseStore& store) noexcept;

/// Validates every call once, then forwards it to the wrapped store (see the file comment).
class CheckedStore final : public ForwardingStore, public LockLister, public AsyncAttempts {
 public:
  /// Wraps `inner` (not null).
  explicit CheckedStore(std::shared_ptr<LeaseStore> inner);

  /// One call, named in messages only when something is refused ("renew of lock 'job'").
  struct Call {
    const char* op;
    std::string_view name;      ///< the lock, candidate group or lock-name prefix
    const char* noun = "lock";  ///< what `name` is
    [[nodiscard]] std::string str() const;
  };

  [[nodiscard]] std::string_view scheme() const override;
  LEADER_LEASE_STORE_OPERATIONS;
  /// Checks every lease as renew() does, then forwards the batch in one call.
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  /// try_acquire() of a request the elector built from validated parts (a lock name it
  /// validated, an owner token of new_owner_token(), the validated options' node id and ttl):
  /// everything try_acquire() does except checking the request again. `sent`: the steady-clock
  /// reading the caller took just before (it stands in for this call's own reading).
  [[nodiscard]] Acquired try_acquire_built(const LeaseRequest& request, Deadline deadline,
                                           TimePoint sent);
  /// release() of a lease the elector holds (built from a grant that passed try_acquire's
  /// checks): everything release() does except checking the lease again.
  [[nodiscard]] LeaseStatus release_held(const Lease& lease, Duration keep_for, Deadline deadline);
  /// True when the wrapped store attempts asynchronously (its AsyncAttempts, in its
  /// configuration).
  [[nodiscard]] bool attempts_async() const noexcept override;
  /// The wrapped store's try_acquire_async with try_acquire_built's checks: the deadline before
  /// anything is sent, the grant's owner, its send time, a stray exception mapped. The request
  /// is one the elector built from validated parts (see try_acquire_built).
  void try_acquire_async(const LeaseRequest& request, Deadline deadline,
                         std::function<void(Attempt)> done) override;
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order,
                            std::function<void(bool changed)> woken) override;
  void cancel_wait(std::uint64_t id) noexcept override;
  /// leader::list_locks() of the wrapped store (failed_precondition when it cannot list).
  [[nodiscard]] std::vector<LockState> list_locks(std::string_view prefix,
                                                  Deadline deadline) override;
  /// The wrapped store's, with this store's listing and asynchronous attempts (they check
  /// first), and itself as `checked`. Its watch is the wrapped store's own.
  [[nodiscard]] Capabilities capabilities() noexcept override;

 private:
  // Throws deadline_exceeded when `deadline` has passed.
  void refuse_expired(Deadline deadline, const Call& call) const;
  // Runs `run` and maps an exception that is not a leader::Error to BackendError{internal}.
  template <typename Run>
  auto guarded(const Call& call, Run&& run) const -> decltype(run());
  // What every grant passes, blocking or asynchronous: the owner asked for (BackendError
  // internal otherwise), a send time (`sent` when the store left it empty).
  void check_grant(const LeaseRequest& request, Acquired& got, TimePoint sent) const;

  std::string scheme_;
  AsyncAttempts* async_ = nullptr;  // the wrapped store's, when it has them
};

}  // namespace leader::detail
