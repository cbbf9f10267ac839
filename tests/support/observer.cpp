#include "observer.hpp"

#include <algorithm>

#include "leader/errors.hpp"
#include "leader/names.hpp"

namespace leader::test {

Observer::Observer(std::shared_ptr<LeaseStore> store, std::string lock, ObserverOptions options)
    : store_(std::move(store)),
      lock_(std::move(lock)),
      options_(std::move(options)),
      owner_(new_owner_token()) {
  thread_ = std::thread([this] { poll_loop(); });
}

Observer::~Observer() {
  stop();
  std::optional<Lease> held = lease();
  if (!held) return;
  try {
    (void)store_->release(*held, Duration{0}, Deadline::after(std::chrono::seconds(5)));
  } catch (const std::exception&) {  // best effort: the lease expires on its own
  }
}

void Observer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Observer::poll_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_ && !takeover_) {
    lock.unlock();
    attempt();
    lock.lock();
    cv_.wait_for(lock, options_.poll, [&] { return stopping_ || takeover_.has_value(); });
  }
}

void Observer::attempt() {
  const TimePoint sent = std::chrono::steady_clock::now();
  ++attempts_;
  try {
    Acquired got =
        store_->try_acquire({lock_, owner_, options_.node_id, options_.ttl, options_.slots},
                            Deadline::after(options_.call_timeout));
    std::lock_guard lock(mu_);
    if (got.lease) {
      lease_ = std::move(got.lease);
      takeover_ = sent;
      ghost_from_ = unknown_run_;
    } else {
      ++contended_;
      unknown_run_.reset();
    }
  } catch (const BackendError& e) {
    ++errors_;
    std::lock_guard lock(mu_);
    if (e.code() == ErrorCode::deadline_exceeded && !unknown_run_) unknown_run_ = sent;
  } catch (const std::exception&) {  // counted; the judge keeps judging
    ++errors_;
  }
  cv_.notify_all();
}

std::optional<TimePoint> Observer::takeover() const {
  std::lock_guard lock(mu_);
  return takeover_;
}

std::optional<TimePoint> Observer::earliest_takeover(TimePoint frozen_until) const {
  std::lock_guard lock(mu_);
  if (!takeover_ || !ghost_from_) return takeover_;
  return std::min(*takeover_, std::max(*ghost_from_, frozen_until));
}

bool Observer::wait_for_takeover(Duration timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return takeover_.has_value(); });
}

std::optional<Lease> Observer::lease() const {
  std::lock_guard lock(mu_);
  return lease_;
}

}  // namespace leader::test
