#pragma once
/// @file forwarding_store.hpp
/// A store that forwards every call, and its capabilities, to another store. Derive from it to
/// change some calls (validate, count, time, delay) and keep the rest: a wrapper built on it
/// never hides what the wrapped store offers (its watch, listing, batch renewal, ...). To
/// intercept a capability too, override capabilities() and replace that entry with your own.

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "leader/store.hpp"

namespace leader {

/// Forwards everything to the store it wraps (see the file comment).
class ForwardingStore : public LeaseStore {
 public:
  /// Wraps `inner`; throws InvalidArgument when it is null.
  explicit ForwardingStore(std::shared_ptr<LeaseStore> inner);

  /// The wrapped store.
  [[nodiscard]] LeaseStore& inner() const noexcept { return *inner_; }

  [[nodiscard]] std::string_view scheme() const override;
  Acquired try_acquire(const LeaseRequest& request, Deadline deadline) override;
  Renewal renew(const Lease& lease, Duration ttl, Deadline deadline) override;
  [[nodiscard]] std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                                      Deadline deadline) override;
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline) override;
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline deadline) override;
  void put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                     Deadline deadline) override;
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view group,
                                                       Deadline deadline) override;
  void remove_candidate(std::string_view group, std::string_view node_id,
                        Deadline deadline) override;
  /// The wrapped store's capabilities (without its `checked` entry, which names a store only
  /// to itself).
  [[nodiscard]] Capabilities capabilities() noexcept override;

 private:
  std::shared_ptr<LeaseStore> inner_;
};

}  // namespace leader
