#include "leader/forwarding_store.hpp"

#include <utility>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"

namespace leader {

ForwardingStore::ForwardingStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {
  if (!inner_) throw InvalidArgument("a forwarding store needs a store to forward to, got null");
}

std::string_view ForwardingStore::scheme() const { return inner_->scheme(); }

Acquired ForwardingStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  return inner_->try_acquire(request, deadline);
}

Renewal ForwardingStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  return inner_->renew(lease, ttl, deadline);
}

std::vector<BatchRenewal> ForwardingStore::renew_batch(std::span<const RenewalRequest> requests,
                                                       Deadline deadline) {
  return inner_->renew_batch(requests, deadline);
}

LeaseStatus ForwardingStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  return inner_->release(lease, keep_for, deadline);
}

LockState ForwardingStore::inspect(std::string_view lock, Deadline deadline) {
  return inner_->inspect(lock, deadline);
}

void ForwardingStore::put_candidate(std::string_view group, const Candidate& candidate,
                                    Duration ttl, Deadline deadline) {
  inner_->put_candidate(group, candidate, ttl, deadline);
}

std::vector<Candidate> ForwardingStore::list_candidates(std::string_view group, Deadline deadline) {
  return inner_->list_candidates(group, deadline);
}

void ForwardingStore::remove_candidate(std::string_view group, std::string_view node_id,
                                       Deadline deadline) {
  inner_->remove_candidate(group, node_id, deadline);
}

Capabilities ForwardingStore::capabilities() noexcept {
  Capabilities c = inner_->capabilities();
  c.checked = nullptr;
  return c;
}

namespace detail {

LeaseStore& unchecked(LeaseStore& store) {
  LeaseStore* s = &store;
  while (const auto* forwarding = dynamic_cast<const ForwardingStore*>(s)) s = &forwarding->inner();
  return *s;
}

}  // namespace detail
}  // namespace leader
