// BlockingPool: the threads that run blocking store waits for the async layers.

#include "leader/blocking_pool.hpp"

namespace leader {

BlockingPool::BlockingPool(std::size_t max_threads) : max_threads_(max_threads ? max_threads : 1) {}

BlockingPool::~BlockingPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void BlockingPool::post(Task task) {
  std::unique_lock lock(mu_);
  queue_.push_back(std::move(task));
  if (idle_ >= queue_.size() || threads_.size() >= max_threads_) {
    lock.unlock();
    cv_.notify_one();
    return;
  }
  threads_.emplace_back([this] { work(); });
}

void BlockingPool::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      ++idle_;
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      continue;
    }
    Task task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // drop captured state outside the lock
    lock.lock();
  }
}

BlockingPool& BlockingPool::shared() {
  // Never destroyed: threads may still be parked in it while static destructors run.
  static auto* pool = new BlockingPool();
  return *pool;
}

BlockingPool& BlockingPool::releases() {
  static auto* pool = new BlockingPool(8);
  return *pool;
}

}  // namespace leader
