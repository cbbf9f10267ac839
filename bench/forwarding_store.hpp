#pragma once
// A store that forwards every call to another one and reports no capabilities (unlike
// leader::ForwardingStore): the core sees a plain store (no watch, no batch unless a subclass
// adds one).
// The benchmarks derive from it to count calls or to take a capability away for a baseline.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "leader/store.hpp"

namespace leader::bench {

class ForwardingStore : public LeaseStore {
 public:
  explicit ForwardingStore(std::shared_ptr<LeaseStore> inner) : inner_(std::move(inner)) {}
  std::string_view scheme() const override { return inner_->scheme(); }
  Acquired try_acquire(const LeaseRequest& r, Deadline d) override {
    return inner_->try_acquire(r, d);
  }
  Renewal renew(const Lease& l, Duration ttl, Deadline d) override {
    return inner_->renew(l, ttl, d);
  }
  LeaseStatus release(const Lease& l, Duration keep_for, Deadline d) override {
    return inner_->release(l, keep_for, d);
  }
  LockState inspect(std::string_view lock, Deadline d) override { return inner_->inspect(lock, d); }
  void put_candidate(std::string_view g, const Candidate& c, Duration t, Deadline d) override {
    inner_->put_candidate(g, c, t, d);
  }
  std::vector<Candidate> list_candidates(std::string_view g, Deadline d) override {
    return inner_->list_candidates(g, d);
  }
  void remove_candidate(std::string_view g, std::string_view n, Deadline d) override {
    inner_->remove_candidate(g, n, d);
  }

 protected:
  LeaseStore& inner() { return *inner_; }

 private:
  std::shared_ptr<LeaseStore> inner_;
};

}  // namespace leader::bench
