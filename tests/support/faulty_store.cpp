#include "faulty_store.hpp"

#include <thread>

#include "leader/errors.hpp"

namespace leader::test {
namespace {

/// The granted ttl a store reported, never more than what was really asked (0 = not reported).
Duration at_most(Duration reported, Duration asked) {
  return reported > Duration{0} && reported < asked ? reported : asked;
}

}  // namespace

FaultyStore::FaultyStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}

Duration FaultyStore::capped(Duration ttl) const {
  const Duration cap = ttl_cap.load();
  return cap > Duration{0} && cap < ttl ? cap : ttl;
}

bool FaultyStore::delayed(Duration ttl) const {
  const Duration only = delay_only_ttl.load();
  return only <= Duration{0} || only == ttl;
}

std::string_view FaultyStore::scheme() const { return inner_->scheme(); }

void FaultyStore::record(Call call) {
  std::lock_guard lock(calls_mu_);
  if (calls_.size() < 1000) calls_.push_back(std::move(call));
}

std::string FaultyStore::timeline(TimePoint origin) const {
  auto ms = [&](TimePoint t) {
    return std::to_string(
        std::chrono::duration_cast<std::chrono::milliseconds>(t - origin).count());
  };
  std::lock_guard lock(calls_mu_);
  std::string out;
  for (const Call& c : calls_)
    out += std::string(c.what) + " entered " + ms(c.entered) + " forwarded " + ms(c.forwarded) +
           " returned " + ms(c.returned) + ": " + c.outcome + "\n";
  return out;
}

Acquired FaultyStore::try_acquire(const LeaseRequest& request, Deadline deadline) {
  const TimePoint entered = std::chrono::steady_clock::now();
  LeaseRequest asked = request;
  asked.ttl = capped(request.ttl);
  Acquired got;
  try {
    got = inner_->try_acquire(asked, deadline);
  } catch (const std::exception& e) {
    record({"acquire", entered, entered, std::chrono::steady_clock::now(), e.what()});
    throw;
  }
  record({"acquire", entered, entered, std::chrono::steady_clock::now(),
          got.lease ? "granted, token " + std::to_string(got.lease->fencing_token) : "contended"});
  if (got.lease && asked.ttl < request.ttl) got.lease->ttl = at_most(got.lease->ttl, asked.ttl);
  return got;
}

Renewal FaultyStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  ++renew_calls_;
  const TimePoint entered = std::chrono::steady_clock::now();
  if (fail_renew.load()) {
    record({"renew", entered, entered, entered, "failed by the FaultyStore"});
    throw BackendError(ErrorCode::unavailable, std::string(scheme()),
                       "renew failed by the test's FaultyStore");
  }
  const bool delay = delayed(ttl);
  if (delay && renew_delay.load() > Duration{0}) std::this_thread::sleep_for(renew_delay.load());
  const Duration asked = capped(ttl);
  const TimePoint forwarded = std::chrono::steady_clock::now();
  Renewal renewal;
  try {
    renewal = inner_->renew(lease, asked, deadline);
  } catch (const std::exception& e) {
    record({"renew", entered, forwarded, std::chrono::steady_clock::now(), e.what()});
    throw;
  }
  record({"renew", entered, forwarded, std::chrono::steady_clock::now(),
          renewal.status == LeaseStatus::ok ? "ok" : "lost"});
  ++renew_answered_;
  if (delay && reply_delay.load() > Duration{0}) std::this_thread::sleep_for(reply_delay.load());
  if (renewal.status == LeaseStatus::ok) {
    ++renew_ok_;
    if (asked < ttl) renewal.ttl = at_most(renewal.ttl, asked);
  }
  return renewal;
}

LeaseStatus FaultyStore::release(const Lease& lease, Duration keep_for, Deadline deadline) {
  return inner_->release(lease, keep_for, deadline);
}

LockState FaultyStore::inspect(std::string_view lock, Deadline deadline) {
  return inner_->inspect(lock, deadline);
}

void FaultyStore::put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                                Deadline deadline) {
  inner_->put_candidate(group, candidate, ttl, deadline);
}

std::vector<Candidate> FaultyStore::list_candidates(std::string_view group, Deadline deadline) {
  return inner_->list_candidates(group, deadline);
}

void FaultyStore::remove_candidate(std::string_view group, std::string_view node_id,
                                   Deadline deadline) {
  inner_->remove_candidate(group, node_id, deadline);
}

}  // namespace leader::test
