#pragma once
/// @file blocking_pool.hpp
/// BlockingPool: the threads on which the async layers (leader/async.hpp, leader/asio) and the
/// engine run blocking store calls. leader/async.hpp includes it.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace leader {

/// A thread pool for blocking store waits. Threads are started on demand up to `max_threads`
/// and then reused; tasks queue when all are busy. Thread-safe. The destructor runs the queued
/// tasks and joins the threads.
class BlockingPool {
 public:
  /// A unit of work run on a pool thread; it must not throw.
  using Task = std::function<void()>;

  /// A pool of at most `max_threads` threads (at least 1).
  explicit BlockingPool(std::size_t max_threads = 64);
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  /// Queues `task`; starts a thread when none is idle and the limit allows.
  void post(Task task);
  /// The thread limit.
  [[nodiscard]] std::size_t max_threads() const { return max_threads_; }
  /// The process-wide pool used when the caller gives none (never destroyed).
  static BlockingPool& shared();
  /// The process-wide pool of the async layers' releases (at most 8 threads, never destroyed):
  /// a release is one store call bounded by the call timeout, and must never queue behind the
  /// lease waits that fill a caller's pool (they may wait for that very release).
  static BlockingPool& releases();

 private:
  void work();

  const std::size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace leader
