#include "pool.hpp"

#include "leader/errors.hpp"
#include "sentinel.hpp"

namespace leader::detail::redis {

ConnectionPool::ConnectionPool(Config config) : config_(std::move(config)) {
  if (config_.transport == Transport::tls) tls_ = std::make_unique<TlsContext>(config_);
}

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

std::unique_ptr<Connection> ConnectionPool::open_connection(Deadline deadline) {
  auto connect_by = deadline.min(Deadline::after(config_.connect_timeout));
  if (!config_.sentinel()) return Connection::open(config_, tls_.get(), connect_by);
  std::optional<Endpoint> primary;
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    primary = primary_;
    generation = generation_;
  }
  if (!primary) {
    primary = ask_sentinels(config_, connect_by);
    std::lock_guard lock(mu_);
    ++discoveries_;
    checked_at_ = std::chrono::steady_clock::now();
    if (generation == generation_) primary_ = primary;
  }
  Config target = config_;
  target.host = primary->host;
  target.port = primary->port;
  target.sentinels.clear();  // the connection's messages name the primary's own address
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
// Sentinels are asked again every `sentinel_check`, by one caller at a time, bounded by
// `connect_timeout` and the caller's deadline; when they name another server,
// the primary is forgotten and this call opens a connection to the new one. When no Sentinel
// answers, the known primary stays in use (it is ROLE-checked on every new connection).
void ConnectionPool::recheck_primary(Deadline deadline) {
  if (!config_.sentinel() || config_.sentinel_check <= Duration{0}) return;
  std::optional<Endpoint> known;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!primary_ || checking_ || now - checked_at_ < config_.sentinel_check) return;
    checking_ = true;
    checked_at_ = now;
    known = primary_;
  }
  std::optional<Endpoint> named;
  try {
    named = ask_sentinels(config_, deadline.min(Deadline::after(config_.connect_timeout)));
  } catch (const BackendError&) {  // keep the known primary; ask again next time
  }
  {
    std::lock_guard lock(mu_);
    checking_ = false;
  }
  if (named && *named != *known) forget_primary();
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

std::uint64_t ConnectionPool::discoveries() const {
  std::lock_guard lock(mu_);
  return discoveries_;
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

}  // namespace leader::detail::redis
