#include "checked_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <utility>

#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/options.hpp"
#include "leader/uri.hpp"

namespace leader::detail {
namespace {

// At most 80 characters of a value, control characters escaped: a bad value may be anything.
std::string shown(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + (s.size() > 80 ? "...'" : "'");
}

void refuse(const std::string& message) { throw InvalidArgument(message); }

}  // namespace

std::string CheckedStore::Call::str() const {
  return std::string(op) + " of " + noun + " " + shown(name);
}

namespace {

// `call` names the operation and its lock or group, e.g. "try_acquire of lock 'job'".
void check_owner(std::string_view owner, const CheckedStore::Call& call) {
  // Branch-free per byte (the compiler vectorises it): a random token's mix of digits and
  // letters made a two-range test with branches mispredict about every other byte.
  bool ok = owner.size() == 32;
  if (ok) {
    unsigned bad = 0;
    for (char ch : owner) {
      const auto c = static_cast<unsigned char>(ch);
      const unsigned digit = static_cast<unsigned char>(c - '0') < 10 ? 1U : 0U;
      const unsigned letter = static_cast<unsigned char>(c - 'a') < 6 ? 1U : 0U;
      bad |= (digit | letter) ^ 1U;
    }
    ok = bad == 0;
  }
  if (!ok)
    refuse(call.str() + ": owner token " + shown(owner) +
           " must be 32 lower-case hex characters (leader::new_owner_token())");
}

void check_node_id(std::string_view node_id, const CheckedStore::Call& call) {
  if (node_id.empty() || node_id.size() > kMaxNodeIdLength)
    refuse(call.str() + ": node id " + shown(node_id) + " is " + std::to_string(node_id.size()) +
           " characters long; it must be 1.." + std::to_string(kMaxNodeIdLength));
  const auto control = std::find_if(node_id.begin(), node_id.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (control != node_id.end())
    refuse(call.str() + ": node id " + shown(node_id) + " has a control character at position " +
           std::to_string(control - node_id.begin()));
}

void check_duration(Duration d, std::string_view name, const CheckedStore::Call& call,
                    bool zero_ok) {
  if (d < Duration{0} || (!zero_ok && d == Duration{0}))
    refuse(call.str() + ": " + std::string(name) + " is " + std::to_string(d.count()) +
           " ms; it must be " + (zero_ok ? ">= 0" : "> 0"));
  if (d > kMaxDuration)
    refuse(call.str() + ": " + std::string(name) + " " + format_duration(d) +
           " is longer than the maximum of 365 days");
}

void check_slots(int slots, const CheckedStore::Call& call) {
  if (slots < 0 || slots > kMaxSlots)
    refuse(call.str() + ": slots = " + std::to_string(slots) + " is outside 0.." +
           std::to_string(kMaxSlots) + " (0: a single leader, N: a group of N)");
}

void check_request(const LeaseRequest& r) {
  validate_lock_name(r.lock);
  const CheckedStore::Call call{"try_acquire", r.lock};
  check_owner(r.owner, call);
  check_node_id(r.node_id, call);
  check_duration(r.ttl, "lease ttl", call, false);
  check_slots(r.slots, call);
}

void check_lease(const Lease& lease, const CheckedStore::Call& call) {
  validate_lock_name(lease.lock);
  check_owner(lease.owner, call);
  check_slots(lease.slots, call);
  const int limit = std::max(1, lease.slots);
  if (lease.slot < 0 || lease.slot >= limit)
    refuse(call.str() + ": slot " + std::to_string(lease.slot) + " is outside 0.." +
           std::to_string(limit - 1) + " (the lease has slots = " + std::to_string(lease.slots) +
           ")");
}

void check_candidate(const Candidate& c, const CheckedStore::Call& call) {
  check_node_id(c.node_id, call);
  constexpr auto kMaxCount = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (c.successes > kMaxCount || c.failures > kMaxCount)
    refuse(call.str() + ": candidate " + shown(c.node_id) +
           " has a success or failure count above " + std::to_string(kMaxCount) +
           " (stores keep signed 64-bit counters)");
  if (c.metadata.size() > kMaxMetadataEntries)
    refuse(call.str() + ": candidate " + shown(c.node_id) + " has " +
           std::to_string(c.metadata.size()) + " metadata entries; the limit is " +
           std::to_string(kMaxMetadataEntries));
  for (const auto& [key, value] : c.metadata) {
    if (key.empty() || key.size() > kMaxMetadataKeyLength)
      refuse(call.str() + ": metadata key " + shown(key) + " must be 1.." +
             std::to_string(kMaxMetadataKeyLength) + " characters");
    if (value.size() > kMaxMetadataValueLength)
      refuse(call.str() + ": metadata value of key " + shown(key) + " is " +
             std::to_string(value.size()) + " characters long; the limit is " +
             std::to_string(kMaxMetadataValueLength));
  }
}

}  // namespace

CheckedStore::CheckedStore(std::shared_ptr<LeaseStore> inner)
    : ForwardingStore(std::move(inner)),
      scheme_(this->inner().scheme()),
      async_(this->inner().capabilities().async) {}

std::string_view CheckedStore::scheme() const { return scheme_; }

void CheckedStore::refuse_expired(Deadline deadline, const Call& call) const {
  if (deadline.expired())
    throw BackendError(ErrorCode::deadline_exceeded, scheme_,
                       call.str() + ": the deadline had passed before the call; nothing was sent");
}

template <typename Run>
auto CheckedStore::guarded(const Call& call, Run&& run) const -> decltype(run()) {
  try {
    return std::forward<Run>(run)();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw BackendError(ErrorCode::internal, scheme_,
                       call.str() + " failed with an unexpected exception: " + e.what());
  }
}

Acquired CheckedStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  check_request(request);
  // One reading: the deadline check and the stamp.
  return try_acquire_built(request, deadline, std::chrono::steady_clock::now());
}

Acquired CheckedStore::try_acquire_built(const LeaseRequest& request, Deadline deadline,
                                         TimePoint sent) {
  const Call call{"try_acquire", request.lock};
  if (sent >= deadline.at())
    throw BackendError(ErrorCode::deadline_exceeded, scheme_,
                       call.str() + ": the deadline had passed before the call; nothing was sent");
  Acquired got = guarded(call, [&] { return inner().try_acquire(request, deadline); });
  check_grant(request, got, sent);
  return got;
}

void refuse_grant_of_another_owner(std::string_view scheme, const LeaseRequest& request,
                                   const Lease& granted) {
  throw BackendError(ErrorCode::internal, std::string(scheme),
                     CheckedStore::Call{"try_acquire", request.lock}.str() +
                         ": the store granted a lease of owner " + shown(granted.owner) +
                         " to a request of owner " + shown(request.owner));
}

void CheckedStore::check_grant(const LeaseRequest& request, Acquired& got, TimePoint sent) const {
  check_grant_owner(scheme_, request, got);
  if (got.lease && got.lease->sent_at == TimePoint{}) got.lease->sent_at = sent;
}

bool CheckedStore::attempts_async() const noexcept {
  return async_ != nullptr && async_->attempts_async();
}

void CheckedStore::try_acquire_async(const LeaseRequest& request, Deadline deadline,
                                     std::function<void(Attempt)> done) {
  const Call call{"try_acquire", request.lock};
  if (async_ == nullptr)
    throw BackendError(ErrorCode::failed_precondition, scheme_,
                       call.str() + ": the store has no asynchronous attempts");
  const TimePoint sent = std::chrono::steady_clock::now();
  if (sent >= deadline.at())
    throw BackendError(ErrorCode::deadline_exceeded, scheme_,
                       call.str() + ": the deadline had passed before the call; nothing was sent");
  guarded(call, [&] {
    async_->try_acquire_async(request, deadline,
                              [this, request, sent, done = std::move(done)](Attempt a) {
                                if (!a.error) {
                                  try {
                                    check_grant(request, a.acquired, sent);
                                  } catch (...) {
                                    a.acquired = {};
                                    a.error = std::current_exception();
                                  }
                                }
                                done(std::move(a));
                              });
  });
}

std::uint64_t CheckedStore::wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                                        Deadline last, std::uint64_t order,
                                        std::function<void(bool changed)> woken) {
  const Call call{"wait_change", lock};
  if (async_ == nullptr)
    throw BackendError(ErrorCode::failed_precondition, scheme_,
                       call.str() + ": the store has no asynchronous attempts");
  return guarded(
      call, [&] { return async_->wait_change(lock, seen, until, last, order, std::move(woken)); });
}

void CheckedStore::cancel_wait(std::uint64_t id) noexcept {
  if (async_ != nullptr) async_->cancel_wait(id);
}

Renewal CheckedStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  const Call call{"renew", lease.lock};
  check_lease(lease, call);
  check_duration(ttl, "lease ttl", call, false);
  refuse_expired(deadline, call);
  return guarded(call, [&] { return inner().renew(lease, ttl, deadline); });
}

std::vector<BatchRenewal> CheckedStore::renew_batch(std::span<const RenewalRequest> requests,
                                                    Deadline deadline) {
  for (const RenewalRequest& r : requests) {  // every lease is checked before anything is sent
    const Call call{"renew", r.lease == nullptr ? std::string_view{} : r.lease->lock};
    if (r.lease == nullptr) throw InvalidArgument(call.str() + ": a batch entry has no lease");
    check_lease(*r.lease, call);
    check_duration(r.ttl, "lease ttl", call, false);
  }
  if (requests.empty()) return {};
  const Call call{"renew_batch", requests.front().lease->lock};
  refuse_expired(deadline, call);
  auto out = guarded(call, [&] { return inner().renew_batch(requests, deadline); });
  if (out.size() != requests.size())
    throw BackendError(ErrorCode::internal, scheme_,
                       call.str() + ": the store answered " + std::to_string(out.size()) +
                           " outcomes for " + std::to_string(requests.size()) + " leases");
  return out;
}

LeaseStatus CheckedStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  const Call call{"release", lease.lock};
  check_lease(lease, call);
  check_duration(keep_for, "keep_for", call, true);
  return release_held(lease, keep_for, deadline);
}

LeaseStatus CheckedStore::release_held(const Lease& lease, Duration keep_for, Deadline deadline) {
  const Call call{"release", lease.lock};
  refuse_expired(deadline, call);
  return guarded(call, [&] { return inner().release(lease, keep_for, deadline); });
}

LockState CheckedStore::inspect(std::string_view lock, Deadline deadline) {
  validate_lock_name(lock);
  const Call call{"inspect", lock};
  refuse_expired(deadline, call);
  return guarded(call, [&] { return inner().inspect(lock, deadline); });
}

void CheckedStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                 Deadline deadline) {
  validate_lock_name(group);
  const Call call{"put_candidate", group, "candidate group"};
  check_candidate(candidate, call);
  check_duration(ttl, "candidate ttl", call, false);
  refuse_expired(deadline, call);
  guarded(call, [&] { inner().put_candidate(group, candidate, ttl, deadline); });
}

std::vector<Candidate> CheckedStore::list_candidates(std::string_view group, Deadline deadline) {
  validate_lock_name(group);
  const Call call{"list_candidates", group, "candidate group"};
  refuse_expired(deadline, call);
  return guarded(call, [&] { return inner().list_candidates(group, deadline); });
}

void CheckedStore::remove_candidate(std::string_view group, std::string_view node_id,
                                    Deadline deadline) {
  validate_lock_name(group);
  const Call call{"remove_candidate", group, "candidate group"};
  check_node_id(node_id, call);
  refuse_expired(deadline, call);
  guarded(call, [&] { inner().remove_candidate(group, node_id, deadline); });
}

std::vector<LockState> CheckedStore::list_locks(std::string_view prefix, Deadline deadline) {
  const Call call{"list_locks", prefix, "lock-name prefix"};
  const bool ok = prefix.size() <= kMaxLockNameLength &&
                  (prefix.empty() || is_valid_lock_name(prefix) ||
                   is_valid_lock_name(std::string(prefix) + "x"));  // may end in '-', ':', ...
  if (!ok)
    throw InvalidArgument(call.str() + ": a prefix must be empty or the start of a valid lock " +
                          "name (names.hpp rules)");
  refuse_expired(deadline, call);
  return guarded(call, [&] { return leader::list_locks(inner(), prefix, deadline); });
}

Capabilities CheckedStore::capabilities() noexcept {
  Capabilities c = ForwardingStore::capabilities();
  if (c.listing != nullptr) c.listing = this;  // the prefix is checked first
  if (c.async != nullptr) c.async = this;      // the deadline and the grant are checked
  c.checked = this;
  return c;
}

bool is_checked(LeaseStore& store) noexcept {
  return static_cast<LeaseStore*>(store.capabilities().checked) == &store;
}

std::shared_ptr<LeaseStore> checked(std::shared_ptr<LeaseStore> store) {
  if (!store || is_checked(*store)) return store;
  return std::make_shared<CheckedStore>(std::move(store));
}

}  // namespace leader::detail
