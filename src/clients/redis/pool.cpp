#include "pool.hpp"

#include <algorithm>

#include "leader/errors.hpp"
#include "sentinel.hpp"

namespace leader::redis {

ConnectionPool::ConnectionPool(ClientConfig config)
    : config_(std::move(config)), tls_(tls_context(config_)), sentinels_(config_.sentinels) {}

ConnectionPool::~ConnectionPool() = default;

int ConnectionPool::open_connections() const {
  std::lock_guard lock(mu_);
  return open_;
}

std::unique_ptr<Connection> ConnectionPool::checkout(Deadline deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());  // most recently used first: it is the warmest
      idle_.pop_back();
      if (!c->closed_while_idle()) return c;
      --open_;  // the server closed it (restart, timeout): drop it and look again
    }
    if (open_ < config_.pool_size) break;
    if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && idle_.empty() &&
        open_ >= config_.pool_size)
      throw BackendError(ErrorCode::deadline_exceeded, "redis",
                         "all " + std::to_string(config_.pool_size) + " connections to redis at " +
                             config_.endpoint() +
                             " stayed busy until the deadline (raise ?pool_size=)");
  }
  ++open_;
  lock.unlock();
  try {
    return open_connection(deadline);
  } catch (...) {
    discard();
    throw;
  }
}

Endpoint ConnectionPool::discover(Deadline deadline) {
  std::vector<Endpoint> order;
  {
    std::lock_guard lock(mu_);
    order = sentinels_;
  }
  const SentinelAnswer answer = ask_sentinels(config_, order, deadline);
  std::lock_guard lock(mu_);
  // Sentinel clients' guideline (redis.io, "Sentinel client spec"): the Sentinel that answered
  // goes to the top of the list.
  const auto it = std::find(sentinels_.begin(), sentinels_.end(), order[answer.answered]);
  if (it != sentinels_.end()) std::rotate(sentinels_.begin(), it, it + 1);
  return answer.primary;
}

std::unique_ptr<Connection> ConnectionPool::open_connection(Deadline deadline) {
  if (!config_.sentinel())
    return Connection::open(config_, tls_.get(),
                            deadline.min(Deadline::after(config_.connect_timeout)));
  std::optional<Endpoint> primary;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    primary = primary_;
    generation = generation_;
  }
  if (!primary) {
    const auto asked = std::chrono::steady_clock::now();
    primary = discover(deadline);  // each Sentinel bounded on its own, all by the call's deadline
    std::lock_guard lock(mu_);
    if (generation == generation_) {
      primary_ = primary;
      checked_at_ = std::max(checked_at_, asked);
    }
  }
  ClientConfig target = config_;
  target.host = primary->host;
  target.port = primary->port;
  target.sentinels.clear();  // the connection's messages name the primary's own address
  const Deadline connect_by = deadline.min(Deadline::after(config_.connect_timeout));
  try {
    auto c = Connection::open(target, tls_.get(), connect_by);
    verify_primary(*c, connect_by);
    c->set_generation(generation);
    return c;
  } catch (const BackendError&) {
    forget_primary();  // down, or not (yet) the primary: ask the Sentinels next time
    throw;
  }
}

// A manual failover (SENTINEL FAILOVER) leaves the old primary serving as a primary until the
// Sentinels' next INFO to it (every 10 s) makes it a replica; no call fails meanwhile. So the
// Sentinels are asked again every `sentinel_check`, by one caller at a time (the others wait for
// its answer), before a call of the blocking path (run()) or of the AsyncLane goes out; when
// they name another server, the pool moves to it and connections opened for the old one are
// closed (the lane's too: their generation is older). When no Sentinel answers, the known
// primary stays in use (it is ROLE-checked on every new connection).
void ConnectionPool::recheck_primary(Deadline deadline) {
  if (!config_.sentinel() || config_.sentinel_check <= Duration{0}) return;
  Endpoint known;
  std::chrono::steady_clock::time_point asked;
  {
    std::unique_lock lock(mu_);
    if (checking_) {  // its answer is this call's: a call sent meanwhile could go to the old one
      const std::uint64_t before = checks_;
      if (!checked_.wait_until(lock, deadline.at(), [&] { return checks_ != before; }))
        throw BackendError(ErrorCode::deadline_exceeded, "redis",
                           "the Sentinels of " + config_.redacted_uri +
                               " were being asked whether the primary moved, and no answer came "
                               "before the call's deadline: not sent");
      return;
    }
    asked = std::chrono::steady_clock::now();
    if (!primary_ || asked - checked_at_ < config_.sentinel_check) return;
    checking_ = true;
    checked_at_ = asked;  // a failed ask waits for the next period too
    known = *primary_;
  }
  std::optional<Endpoint> named;
  try {
    named = discover(deadline);
  } catch (...) {  // no Sentinel answered: keep the known primary; ask again next time
  }
  if (named && *named != known) move_primary(*named);  // before the waiters go on
  {
    std::lock_guard lock(mu_);
    checking_ = false;
    ++checks_;
  }
  checked_.notify_all();
}

void ConnectionPool::move_primary(const Endpoint& next) {
  forget_primary();
  std::lock_guard lock(mu_);
  if (!primary_) primary_ = next;
}

void ConnectionPool::forget_primary() {
  if (!config_.sentinel()) return;
  std::vector<std::unique_ptr<Connection>> closing;
  {
    std::lock_guard lock(mu_);
    primary_.reset();
    ++generation_;
    closing.swap(idle_);
    open_ -= static_cast<int>(closing.size());
  }
  cv_.notify_all();
}

std::uint64_t ConnectionPool::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

void ConnectionPool::checkin(std::unique_ptr<Connection> c) {
  c->mark_reused();
  {
    std::lock_guard lock(mu_);
    if (c->generation() != generation_) {
      --open_;  // opened for a primary that was forgotten since: never reused
    } else {
      idle_.push_back(std::move(c));
      c = nullptr;
    }
  }
  cv_.notify_one();
}

void ConnectionPool::discard() {
  {
    std::lock_guard lock(mu_);
    --open_;
  }
  cv_.notify_one();
}

void ConnectionPool::run(Deadline deadline, const std::function<void(Connection&, Deadline)>& use) {
  if (deadline.expired())
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        "the deadline passed before the call to redis at " + config_.endpoint() + " started");
  deadline = deadline.min(Deadline::after(config_.command_timeout));
  recheck_primary(deadline);
  std::string failed_at;  // the server of a failed first attempt
  for (int attempt = 0;; ++attempt) {
    auto c = checkout(deadline);
    if (attempt > 0 && c->endpoint() != failed_at) {
      // Sentinel: the primary changed (failover). The first attempt may have reached the old
      // primary; a write possibly sent is never replayed on another server.
      std::string why = "the connection to the primary " + failed_at;
      why += " failed and the Sentinels now name " + c->endpoint();
      why += ": not retried there (a failover; the call's outcome on " + failed_at + " is unknown)";
      checkin(std::move(c));
      throw BackendError(ErrorCode::unavailable, "redis", why);
    }
    bool reused = c->reused();
    try {
      use(*c, deadline);
    } catch (const BackendError& e) {
      failed_at = c->endpoint();
      c.reset();
      discard();
      if (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded)
        forget_primary();  // Sentinel: maybe a failover; ask again on the next call
      if (e.code() == ErrorCode::unavailable && reused && attempt == 0 && !deadline.expired())
        continue;  // a stale connection from before a server restart: one fresh try
      throw;
    } catch (...) {
      c.reset();
      discard();
      throw;
    }
    checkin(std::move(c));
    return;
  }
}

}  // namespace leader::redis
