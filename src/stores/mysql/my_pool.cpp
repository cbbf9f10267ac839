#include "my_pool.hpp"

namespace leader::detail::my {

Pool::Pool(ConnectOptions options, int max_size, Setup setup)
    : options_(std::move(options)), max_size_(max_size), setup_(std::move(setup)) {}

Pool::Handle::~Handle() {
  if (conn_) pool_->give_back(std::move(conn_));
}

void Pool::give_back(std::unique_ptr<Connection> conn) {
  std::lock_guard lock(mu_);
  if (conn->broken()) {
    --open_;
  } else {
    idle_.push_back(std::move(conn));
  }
  cv_.notify_one();
}

Pool::Handle Pool::acquire(Deadline deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    while (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      if (conn->idle_and_alive()) return Handle(this, std::move(conn));
      --open_;  // the server closed it (restart, idle timeout): drop and look further
    }
    if (open_ < max_size_) break;
    if (cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && idle_.empty() &&
        open_ >= max_size_)
      throw BackendError(ErrorCode::deadline_exceeded, kScheme,
                         "no free connection in the pool before the deadline");
  }
  ++open_;
  lock.unlock();
  try {
    auto conn = Connection::open(options_, deadline);
    setup_(*conn, deadline);
    return Handle(this, std::move(conn));
  } catch (...) {
    lock.lock();
    --open_;
    cv_.notify_one();
    throw;
  }
}

}  // namespace leader::detail::my
