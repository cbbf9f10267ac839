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
    if (got.lease) {
      // In a group a ghost may hold another slot, granted before this attempt: the earliest wins.
      // (The fresh grant is then left to expire on the server.)
      if (ghosts_.empty() || !adopt_ghost()) {
        std::lock_guard lock(mu_);
        lease_ = std::move(got.lease);
        takeover_ = sent;
        seen_ = std::chrono::steady_clock::now();
      }
    } else {
      ++contended_;
      if (!ghosts_.empty()) adopt_ghost();
    }
  } catch (const BackendError&) {  // unknown outcome: the server may hold a grant to owner_
    ++errors_;
    ghosts_.emplace(owner_, sent);
    owner_ = new_owner_token();
  } catch (const std::exception&) {  // counted; the judge keeps judging
    ++errors_;
  }
  cv_.notify_all();
}

bool Observer::adopt_ghost() {
  LockState state;
  const TimePoint inspect_sent = std::chrono::steady_clock::now();
  try {
    state = store_->inspect(lock_, Deadline::after(options_.call_timeout));
  } catch (const std::exception&) {  // the next contended answer asks again
    ++errors_;
    return false;
  }
  const TimePoint replied = std::chrono::steady_clock::now();
  const Holder* earliest = nullptr;
  TimePoint earliest_sent{};
  for (const Holder& h : state.holders) {
    auto ghost = ghosts_.find(h.owner);
    if (ghost == ghosts_.end()) continue;
    if (earliest == nullptr || ghost->second < earliest_sent) {
      earliest = &h;
      earliest_sent = ghost->second;
    }
  }
  if (earliest == nullptr) return false;
  std::lock_guard lock(mu_);
  lease_ = Lease{lock_,          earliest->owner, earliest->node_id, earliest->fencing_token,
                 earliest->slot, options_.slots,  options_.ttl,      earliest_sent};
  takeover_ = earliest_sent;
  seen_ = replied;
  ghost_expires_in_ = earliest->expires_in;
  // The server's own dating, for failure messages only (stores report expires_in at different
  // precisions: etcd in whole seconds, so it never moves a verdict): the grant set the expiry to
  // grant + ttl, and the inspect, answered after inspect_sent, saw expires_in left.
  ghost_server_dated_ = inspect_sent + earliest->expires_in - options_.ttl;
  ghost_won_ = true;
  return true;
}

std::optional<TimePoint> Observer::takeover() const {
  std::lock_guard lock(mu_);
  return takeover_;
}

std::optional<TimePoint> Observer::earliest_takeover(TimePoint frozen_until) const {
  std::lock_guard lock(mu_);
  if (!takeover_ || !ghost_won_) return takeover_;
  return std::max(*takeover_, frozen_until);
}

bool Observer::ghost_won() const {
  std::lock_guard lock(mu_);
  return ghost_won_;
}

std::optional<TimePoint> Observer::takeover_seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

std::string Observer::describe() const {
  std::lock_guard lock(mu_);
  if (!takeover_) return "no takeover";
  using Ms = std::chrono::milliseconds;
  const auto width = std::chrono::duration_cast<Ms>(seen_.value_or(*takeover_) - *takeover_);
  std::string out =
      std::string(ghost_won_ ? "a ghost (an attempt whose reply was lost)" : "a granted attempt") +
      " sent at the takeover instant, seen held " + std::to_string(width.count()) + " ms later";
  if (ghost_won_)
    out +=
        " with " + std::to_string(std::chrono::duration_cast<Ms>(ghost_expires_in_).count()) +
        " ms of its " + std::to_string(std::chrono::duration_cast<Ms>(options_.ttl).count()) +
        " ms ttl left (server-dated grant about " +
        std::to_string(std::chrono::duration_cast<Ms>(ghost_server_dated_ - *takeover_).count()) +
        " ms after the takeover instant)";
  return out + "; " + std::to_string(attempts_.load()) + " attempts, " +
         std::to_string(errors_.load()) + " errors";
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
